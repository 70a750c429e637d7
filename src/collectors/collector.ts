import type { PanelInfo } from '../recording/collect.js';
import type { Snapshot } from './snapshot.js';
import type { ProfileSummary } from '../storage/profile.js';

/** What a panel's data may depend on, as the reading profiler knows it. */
export interface PanelOptions {
  /** Headers are redacted once more as they are read: a key added since they were stored applies. */
  redactKeys: string[];
  /** Milliseconds from which a query is marked slow. */
  slowQuery: number;
  /** Host names besides loopback ones whose profile links are shown as links (the allowedHosts and linkHosts options). */
  knownHosts: string[];
}

/**
 * A core panel's data source. collect() derives it when a page reads the profile, from the stored
 * record (see snapshot.ts), and returns plain JSON (or undefined when the panel has nothing for
 * this request).
 */
export interface CorePanel<T = unknown> extends PanelInfo<T> {
  collect(snapshot: Snapshot, options: PanelOptions): T | undefined;
  /** The data from a row of panels stored before records (packed: without what the summary said), as it was collected. */
  unpack?(stored: never, summary: ProfileSummary): T;
}


export type { Collector, PanelInfo } from '../recording/collect.js';
