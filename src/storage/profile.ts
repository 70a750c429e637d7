import type { ProfileRecord, RecordSummary } from '../redaction/record.js';

/** The columns of a stored profile that search and lists read, without the panel data: a record's (see redaction/record.ts), its type and who served it. */
export interface ProfileSummary extends RecordSummary {
  type: string;
  /** The instance that served it: host name and pid, or the `instance` option. Null in profiles from before it was recorded. */
  instance?: string | null;
}

/** A recorded request: plain JSON, the unit everything else passes around. */
export interface Profile extends ProfileSummary {
  /** Panel data by collector id; a panel with nothing to show is absent. */
  collectors: Record<string, unknown>;
  /** Collectors that threw, by id, with their message: the panel says so instead of vanishing. */
  collectorErrors?: Record<string, string>;
}

/**
 * A profile ready for storage: its summary columns, its data as JSON, and the process's config
 * apart (the same for every request of a process, it is stored once: the configs table). The
 * data is a record (see redaction/record.ts); rows from before records hold panels (packed, see
 * collectors/stored.ts) or a profile's collectors as they were.
 */
export interface StoredProfile {
  summary: ProfileSummary;
  data: string;
  config?: string;
}

/** A stored row as storage gives it back: the summary, the data in whichever form it was stored, and the config. */
export interface StoredRead extends ProfileSummary {
  body: StoredBody;
  config?: unknown;
}

export type StoredBody =
  | { record: ProfileRecord }
  | { panels: Record<string, unknown>; collectors?: Record<string, unknown>; collectorErrors?: Record<string, string> }
  | { collectors?: Record<string, unknown>; collectorErrors?: Record<string, string> };

/** Where the config panel's data is in rows of panels: in its place among them, stored apart. */
export const CONFIG_APART = 0;

let lastConfig: unknown;
let lastConfigJson = '';

/** The config is one frozen object per process (see recording/process-config.ts): serialised once. */
function configJson(config: unknown): string {
  if (config === lastConfig) return lastConfigJson;
  const json = JSON.stringify(config);
  if (Object.isFrozen(config)) [lastConfig, lastConfigJson] = [config, json];
  return json;
}

/**
 * A record as stored. The app's own panels are what may not serialise (a BigInt, a cycle, a
 * getter that throws): one that cannot is replaced by a note of why, and costs its own data only,
 * never the profile, nor the batch it is written with.
 */
export function serialiseRecord(summary: ProfileSummary, record: ProfileRecord, config: unknown): StoredProfile {
  const stored: StoredProfile = { summary, data: '', config: config === undefined ? undefined : configJson(config) };
  try {
    stored.data = JSON.stringify({ record });
  } catch {
    const extra: Record<string, unknown> = {};
    const errors: Record<string, string> = { ...record.extraErrors };
    for (const [id, data] of Object.entries(record.extra ?? {})) {
      try {
        JSON.stringify(data);
        extra[id] = data;
      } catch (err) {
        errors[id] = `its data could not be stored: ${(err as Error)?.message ?? err}`;
      }
    }
    stored.data = JSON.stringify({ record: { ...record, extra, extraErrors: errors } });
  }
  return stored;
}

/** A whole profile as stored by hand (tests, tools): its panels as they are, with no record to derive them from. */
export function serialise(profile: Profile): StoredProfile {
  const { collectors, collectorErrors, ...summary } = profile;
  return { summary, data: JSON.stringify({ collectors, collectorErrors }) };
}
