import type { Profile, StoredRead } from '../storage/profile.js';
import { collectEach } from '../recording/collect.js';
import type { CorePanel, PanelOptions } from './collector.js';
import { snapshotOf } from './snapshot.js';
import { unpackPanels } from './stored.js';
import { CONFIG_APART } from '../storage/profile.js';

/**
 * A stored profile as the pages show it: every core panel derived from its record, the app's own
 * panels as they were collected. A panel that throws costs its own data only: `tell` hears of it,
 * and the profile notes it, as it notes the parts that could not be stored. Rows from before
 * records hold their panels already.
 */
export function profileFrom(stored: StoredRead, panels: CorePanel[], options: PanelOptions, tell: (message: string) => void): Profile {
  const { body, config, ...summary } = stored;
  if (!('record' in body)) return readPanels(stored);
  const { record } = body;
  const s = snapshotOf(record, summary, config, options.redactKeys);
  const profile: Profile = { ...summary, collectors: {} };
  const failed = collectEach(panels, (panel) => panel.collect(s, options), profile.collectors, tell);
  // The raw CPU profile goes beside its panel, for the .cpuprofile download: the panel's JSON stays small.
  if (s.cpu?.profile !== undefined) profile.collectors.cpuprofile = s.cpu.profile;
  Object.assign(profile.collectors, s.extra);
  if (failed || s.extraErrors || record.failed) profile.collectorErrors = { ...record.failed, ...failed, ...s.extraErrors };
  return profile;
}

/** A row from before records: its panels packed (see CorePanel.pack), or as they were. */
function readPanels(stored: StoredRead): Profile {
  const { body, config, ...summary } = stored;
  const given = body as { panels?: Record<string, unknown>; collectors?: Record<string, unknown>; collectorErrors?: Record<string, string> };
  const collectors = given.panels === undefined ? (given.collectors ?? {}) : unpackPanels(given.panels, given.collectors, summary);
  if (collectors.config === CONFIG_APART) collectors.config = config;
  return { ...summary, collectors, ...(given.collectorErrors ? { collectorErrors: given.collectorErrors } : {}) };
}
