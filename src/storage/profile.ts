import type { ProfileRecord, RecordSummary } from '../redaction/record.js';
import type { Fact } from '../redaction/facts.js';

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
  /** What it adds to the insights across requests (see redaction/facts.ts), summed as it is stored (see insight-sums.ts), and when its profiler started. */
  insights?: { since: number; facts: Fact[] };
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
 * The most characters one record's JSON may take. Its parts are bounded where they are captured
 * (bodies, dumps, logs); this holds the whole, so that one request's data can never cost another
 * request its profile.
 */
export const MAX_RECORD_CHARS = 8 * 1024 * 1024;

/**
 * A record as stored. The app's own panels are what may not serialise (a BigInt, a cycle, a
 * getter that throws): one that cannot is replaced by a note of why, and costs its own data only,
 * never the profile, nor the batch it is written with. A record over MAX_RECORD_CHARS loses its
 * largest parts, each named in `failed`, until it fits.
 */
export function serialiseRecord(summary: ProfileSummary, record: ProfileRecord, config: unknown): StoredProfile {
  const stored: StoredProfile = { summary, data: '', config: config === undefined ? undefined : configJson(config) };
  try {
    stored.data = JSON.stringify({ record });
  } catch {
    record = { ...record, ...storableExtra(record) };
    stored.data = serialisedWithin(record);
  }
  if (stored.data.length > MAX_RECORD_CHARS) stored.data = serialisedWithin(record);
  return stored;
}

/** The app's own panels that serialise; the others named in extraErrors. */
function storableExtra(record: ProfileRecord): Pick<ProfileRecord, 'extra' | 'extraErrors'> {
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
  return { extra, extraErrors: errors };
}

/** The record's JSON within MAX_RECORD_CHARS: its parts weighed one by one, the largest left out (and said so) until it fits. */
function serialisedWithin(record: ProfileRecord): string {
  const weights: [keyof ProfileRecord, number][] = [];
  for (const key of Object.keys(record) as (keyof ProfileRecord)[]) {
    let weight: number;
    try {
      weight = JSON.stringify(record[key])?.length ?? 0;
    } catch {
      weight = Infinity;
    }
    weights.push([key, weight]);
  }
  weights.sort((a, b) => b[1] - a[1]);
  let total = weights.reduce((sum, [, weight]) => sum + (Number.isFinite(weight) ? weight : 0), 0);
  const bounded: Record<string, unknown> = { ...record };
  const failed: Record<string, string> = { ...record.failed };
  for (const [key, weight] of weights) {
    if ((total <= MAX_RECORD_CHARS - 4096 && Number.isFinite(weight)) || KEPT.has(key)) continue;
    delete bounded[key];
    failed[PANEL_OF[key] ?? key] = Number.isFinite(weight) ? `left out: its ${megabytes(weight)} MB were over the ${megabytes(MAX_RECORD_CHARS)} MB a profile may take` : 'left out: it could not be stored';
    if (Number.isFinite(weight)) total -= weight;
  }
  bounded.failed = failed;
  return JSON.stringify({ record: bounded });
}

/** What every record has, each bounded where it is captured: the panels read them. */
const KEPT = new Set<keyof ProfileRecord>(['ttfb', 'rss', 'rawHeaders', 'head', 'responseBody', 'trail', 'failed']);
/** The panel that shows a part of a record, where it is not named as the part is. */
const PANEL_OF: Partial<Record<keyof ProfileRecord, string>> = { inside: 'db', requestBody: 'request', query: 'request', params: 'request', checks: 'security', trail: 'performance', loop: 'performance' };

const megabytes = (chars: number): string => (chars / (1024 * 1024)).toFixed(1);

/** A whole profile as stored by hand (tests, tools): its panels as they are, with no record to derive them from. */
export function serialise(profile: Profile): StoredProfile {
  const { collectors, collectorErrors, ...summary } = profile;
  return { summary, data: JSON.stringify({ collectors, collectorErrors }) };
}
