import type { Span } from '../recording/context.js';

/** The router layer that was running at `ms`: the last one entered by then. */
export function layerAt(spans: Span[], ms: number): string | undefined {
  let name: string | undefined;
  for (const s of spans) {
    if (s.start > ms) break;
    name = s.name;
  }
  return name;
}

export const duration = (start: number, end: number) => Math.round(Math.max(end - start, 0) * 1000) / 1000;
