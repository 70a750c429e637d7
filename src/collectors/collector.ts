import type { AppInfo } from './app-info.js';
import type { ResolvedOptions } from '../options.js';
import type { RequestContext } from '../recording/context.js';
import type { Snapshot } from '../recording/snapshot.js';
import type { ProfileSummary } from '../storage/profile.js';

/** What a panel's data may depend on, as the writer thread knows it. */
export interface PanelOptions {
  debug: boolean;
  bodyLimit: number;
  redactKeys: string[];
  /** Milliseconds from which a query is marked slow. */
  slowQuery: number;
  /** Host names besides loopback ones whose profile links are shown as links (the allowedHosts and linkHosts options). */
  knownHosts: string[];
  /** The app, once its first request has been seen (see app-info.ts). */
  app?: AppInfo;
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
  /**
   * The data as stored: without what unpack() gets back exactly from the profile's summary (its
   * token, URL, method, status, time, duration), from the rest of the data, or from a default.
   * Every profile pays for what it stores, in bytes and in the writer's time: leave out what the
   * summary already says. unpack(pack(data)) must be data, key order included. pack() changes
   * data in place (setting what is left out to undefined keeps the object's shape, and copies cost
   * more than they save): the data is the writer's own, stored and dropped. It reads everything it
   * needs before it changes anything, so that data of a shape it does not know is kept whole.
   */
  pack?(data: T, summary: ProfileSummary): unknown;
  unpack?(stored: never, summary: ProfileSummary): T;
}

/**
 * A panel of the app's own. collect() runs on the request's thread when the response has
 * finished, with the live req and res, and must return plain data; keep it quick.
 */
export interface Collector<T = unknown> extends PanelInfo<T> {
  collect(ctx: RequestContext, options: ResolvedOptions): T | undefined;
}
