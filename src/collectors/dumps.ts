import type { Dump } from '../recording/dump.js';
import type { CorePanel } from './collector.js';

export interface DumpsData {
  dumps: Dump[];
  /** dump() calls past the bound: counted, not kept. */
  dropped: number;
}

/** What the app dump()ed while the request (or command) ran, in order: each value as it was at the call. */
export const dumps: CorePanel<DumpsData> = {
  id: 'dumps',
  title: 'Dumps',
  collect: (s) => (s.dumps.length === 0 ? undefined : { dumps: s.dumps, dropped: s.dumpsDropped }),
  badge: (data) => data.dumps.length,
};
