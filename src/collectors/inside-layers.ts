import type { Span } from '../recording/context.js';

/**
 * The router layer that was running at `ms`: the last one entered by then. A route's handler is
 * named with its route ("route GET /books › handler"): an anonymous handler alone says little.
 */
export function layerAt(spans: Span[], ms: number): string | undefined {
  let at: Span | undefined;
  let route: Span | undefined;
  for (const s of spans) {
    if (s.start > ms) break;
    if (s.kind === 'route') route = s;
    else if (s.kind !== 'handler') route = undefined;
    at = s;
  }
  return at?.kind === 'handler' && route !== undefined ? `${route.name} › ${at.name}` : at?.name;
}

export const duration = (start: number, end: number) => Math.round(Math.max(end - start, 0) * 1000) / 1000;

/** Work a request did after its response went out (see recording/recorder.ts, lingering): started after it, or started before and ended after. */
export type AfterResponse = 'started' | 'ended';

export function afterResponse(start: number, end: number, answered: number): AfterResponse | undefined {
  if (start >= answered) return 'started';
  return end > answered ? 'ended' : undefined;
}
