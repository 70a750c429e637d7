import type { WorkContext } from './context.js';
import { insideOf, MAX_QUERIES, sinceStart } from './inside.js';
import { plain } from './plain.js';

/** One template the request rendered (res.render, app.render). Times are ms since arrival. */
export interface RenderEntry {
  /** As the app passed it. */
  name: string;
  file: string;
  /** The engine's package, or the extension it was registered for. */
  engine: string;
  /** The names of the locals it was given. */
  locals: string[];
  /** Their values, copied within a budget, where the viewLocals option asks for them. */
  values?: unknown;
  start: number;
  end: number;
  error: unknown;
  /** The render this one ran inside (an engine that renders partials through the app), by index. */
  parent?: number;
}

/** What a render's locals may keep of their values: roughly the bytes of their JSON. */
const VALUES_BUDGET = 8 * 1024;

export function renderStarted(ctx: WorkContext, name: string, file: string, engine: string, locals: Record<string, unknown>): RenderEntry | undefined {
  const renders = insideOf(ctx).renders;
  if (renders.length >= MAX_QUERIES) return undefined;
  const names = Object.keys(locals).slice(0, 100);
  const entry: RenderEntry = { name, file, engine, locals: names, start: sinceStart(ctx), end: -1, error: undefined };
  // Copied now: the app may change them once the view is rendered.
  if (ctx.recorder.viewLocals) entry.values = plain(Object.fromEntries(names.map((key) => [key, locals[key]])), VALUES_BUDGET);
  for (let i = renders.length - 1; i >= 0; i--) {
    if (renders[i].end < 0) {
      entry.parent = i;
      break;
    }
  }
  renders.push(entry);
  return entry;
}

export function renderEnded(ctx: WorkContext, entry: RenderEntry | undefined, error: unknown): void {
  if (entry === undefined || entry.end >= 0) return;
  entry.end = sinceStart(ctx);
  if (error !== undefined && error !== null) entry.error = error;
}
