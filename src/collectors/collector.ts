import type { ResolvedOptions } from '../options.js';
import type { RequestContext } from '../recording/context.js';

/**
 * One panel's data source. collect() runs after the response, off the request path, and returns
 * plain JSON (or undefined when the panel has nothing for this request).
 */
export interface Collector<T = unknown> {
  id: string;
  title: string;
  collect(ctx: RequestContext, options: ResolvedOptions): T | undefined;
  /** A short badge for the panel menu (a count, a status), read from the stored data. */
  badge?(data: T): string | number | undefined;
}
