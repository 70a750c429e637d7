import type { RequestContext } from './context.js';
import { insideOf, MAX_QUERIES, sinceStart } from './inside.js';

/** One template the request rendered (res.render, app.render). Times are ms since arrival. */
export interface RenderEntry {
  /** As the app passed it. */
  name: string;
  file: string;
  /** The engine's package, or the extension it was registered for. */
  engine: string;
  /** The names of the locals it was given (values are not kept). */
  locals: string[];
  start: number;
  end: number;
  error: unknown;
  /** The render this one ran inside (an engine that renders partials through the app), by index. */
  parent?: number;
}

export function renderStarted(ctx: RequestContext, name: string, file: string, engine: string, locals: string[]): RenderEntry | undefined {
  const renders = insideOf(ctx).renders;
  if (renders.length >= MAX_QUERIES) return undefined;
  const entry: RenderEntry = { name, file, engine, locals, start: sinceStart(ctx), end: -1, error: undefined };
  for (let i = renders.length - 1; i >= 0; i--) {
    if (renders[i].end < 0) {
      entry.parent = i;
      break;
    }
  }
  renders.push(entry);
  return entry;
}

export function renderEnded(ctx: RequestContext, entry: RenderEntry | undefined, error: unknown): void {
  if (entry === undefined || entry.end >= 0) return;
  entry.end = sinceStart(ctx);
  if (error !== undefined && error !== null) entry.error = error;
}
