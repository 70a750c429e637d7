import type { ResolvedOptions } from '../options.js';
import type { RequestContext } from '../recording/context.js';
import type { Snapshot } from '../recording/snapshot.js';

/** What a panel's data may depend on, as the writer thread knows it. */
export interface PanelOptions {
  debug: boolean;
  bodyLimit: number;
  redactKeys: string[];
  /** Milliseconds from which a query is marked slow. */
  slowQuery: number;
}

/** What the profile pages need of any panel: its place in the menu and its badge. */
export interface PanelInfo<T = unknown> {
  id: string;
  title: string;
  /** A short badge for the panel menu (a count, a status), read from the stored data. */
  badge?(data: T): string | number | undefined;
}

/**
 * A core panel's data source. collect() runs in the writer thread, from the request's snapshot,
 * and returns plain JSON (or undefined when the panel has nothing for this request).
 */
export interface CorePanel<T = unknown> extends PanelInfo<T> {
  collect(snapshot: Snapshot, options: PanelOptions): T | undefined;
}

/**
 * A panel of the app's own. collect() runs on the request's thread when the response has
 * finished, with the live req and res, and must return plain data; keep it quick.
 */
export interface Collector<T = unknown> extends PanelInfo<T> {
  collect(ctx: RequestContext, options: ResolvedOptions): T | undefined;
}
