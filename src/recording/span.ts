import { currentContext } from './context.js';
import { whenSettled } from './settled.js';
import { insideOf, MAX_QUERIES, sinceStart, type MarkEntry } from './inside.js';

/**
 * Runs fn and records it as a timed span of the request that is running: `await span('render',
 * () => render(page))`. Returns what fn returns (for an async fn, a promise that settles as fn's does); a span that throws
 * or rejects is marked so and the error passes on untouched. Outside a request it just runs fn.
 */
export function span<T>(name: string, fn: () => T): T {
  const done = startSpan(name);
  return done === undefined ? fn() : whenSettled(fn, done);
}

/** A span of the running request that ends when the returned function is called; undefined outside a request. */
export function startSpan(name: string): ((failed: boolean) => void) | undefined {
  const ctx = currentContext();
  if (ctx === undefined) return undefined;
  const inside = insideOf(ctx);
  if (inside.marks.length >= MAX_QUERIES) return undefined;
  const mark: MarkEntry = { name: String(name), start: sinceStart(ctx), end: -1, error: false };
  inside.marks.push(mark);
  return (failed) => {
    if (mark.end >= 0) return;
    mark.end = sinceStart(ctx);
    mark.error = failed;
  };
}
