import { ROUTE_ERROR, ROUTE_N_PLUS_ONE, type Fact } from '../redaction/facts.js';

/**
 * The insights' sums (see insights.ts): what each stored profile's facts add, summed by the minute
 * and by the hour, so that a period reads a few thousand rows however many profiles it holds. The
 * writer adds a batch's sums in the transaction that stores its profiles (upserts that add, so
 * several writers and retention may touch a row in any order); retention deletes the sums of
 * every bucket a pruned profile was in and raises the horizon, before which nothing is read.
 */

export const MINUTE = 60_000;
export const HOUR = 3_600_000;
/** The span of the one row that holds the horizon: the time of the newest profile deleted, in `bucket`. */
export const HORIZON = 0;

/** What a batch adds to one bucket's row (the columns of insight_sums). */
export interface SumRow {
  span: number;
  /** When it starts: a minute's or an hour's start, or (a minute) when its profiler started, if later. */
  bucket: number;
  kind: string;
  key: string;
  /** The route (or command) that ran it, '' for a route's own row. */
  route: string;
  /** The app's line, '' where a fact names none. */
  line: string;
  /** Profiles it is in. */
  requests: number;
  n: number;
  ms: number;
  peak: number;
  /** Routes: requests that failed; others: the facts' `bad` summed. */
  bad: number;
  /** Routes: requests with a likely N+1. */
  flagged: number;
  first: number;
  last: number;
  /** The token of its slowest profile (the latest of equals): what a row links to. */
  shown: string;
  /** Routes, commands, calls and users: times (a call's slowest a request) by bin of BIN_EDGES, as JSON `{ "bin": count }`. */
  hist: string | null;
  /** Routes and commands: requests by how many statements they ran, as JSON `{ "n": count }`. */
  nhist: string | null;
}

export const SUM_COLUMNS = 'span, bucket, kind, key, route, line, requests, n, ms, peak, bad, flagged, first, last, shown, hist, nhist';

/** Upper bounds of the time bins, in ms: 21 a decade from 0.01 ms to 100 s, each within 16 % of the next, with 1, 2 and 5 of each decade among them (the page's histogram's edges). */
const STEPS = [1, 1.1, 1.2, 1.3, 1.5, 1.6, 1.8, 2, 2.2, 2.5, 2.8, 3.2, 3.6, 4, 4.5, 5, 5.6, 6.3, 7.1, 8, 9];
export const BIN_EDGES: number[] = [];
for (let decade = -2; decade < 5; decade++) for (const step of STEPS) BIN_EDGES.push(Number((step * 10 ** decade).toPrecision(3)));
BIN_EDGES.push(100_000, Infinity);

/** The bin a time falls in: the first whose upper bound holds it. */
export function binOf(ms: number): number {
  let lo = 0;
  let hi = BIN_EDGES.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ms <= BIN_EDGES[mid]) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

const TIMED = new Set(['route', 'command', 'call', 'user']);
const REQUESTS = new Set(['route', 'command']);

/** A stored profile's part in a batch's sums: when it ran, its token as stored, its facts, and when its profiler started. */
export interface Counted {
  time: number;
  token: string;
  since: number;
  facts: Fact[];
}

type Building = SumRow & { times?: Map<number, number>; counts?: Map<number, number> };

const json = (counts: Map<number, number> | undefined) => (counts === undefined ? null : JSON.stringify(Object.fromEntries(counts)));
const add = (counts: Map<number, number>, at: number) => counts.set(at, (counts.get(at) ?? 0) + 1);

/**
 * What a batch of stored profiles adds to each bucket, a row each, in one order (the key's) so
 * that writers of a shared store lock rows alike. A minute's bucket starts no earlier than its
 * profiler: "since the app started" reads exactly its own.
 */
export function sumsOf(profiles: Counted[]): SumRow[] {
  const rows = new Map<string, Building>();
  for (const { time, token, since, facts } of profiles) {
    // A clock stepped back before the start leaves the profile in its own minute: a bucket never starts after what it holds.
    const minute = time >= since ? Math.max(time - (time % MINUTE), since) : time - (time % MINUTE);
    const hour = time - (time % HOUR);
    for (const f of facts) {
      const route = f.route ?? '';
      const line = f.line ?? '';
      const request = REQUESTS.has(f.kind);
      for (const [span, bucket] of [[MINUTE, minute], [HOUR, hour]]) {
        const id = `${span}\t${bucket}\t${f.kind}\t${f.key}\t${route}\t${line}`;
        let row = rows.get(id);
        if (row === undefined) {
          rows.set(id, (row = { span, bucket, kind: f.kind, key: f.key, route, line, requests: 0, n: 0, ms: 0, peak: -1, bad: 0, flagged: 0, first: time, last: time, shown: token, hist: null, nhist: null }));
          if (TIMED.has(f.kind)) row.times = new Map();
          if (request) row.counts = new Map();
        }
        row.requests++;
        row.n += f.n;
        row.ms += f.ms;
        if (f.peak >= row.peak) [row.peak, row.shown] = [f.peak, token];
        if (request) {
          if (f.bad & ROUTE_ERROR) row.bad++;
          if (f.bad & ROUTE_N_PLUS_ONE) row.flagged++;
          add(row.counts!, f.n);
        } else row.bad += f.bad;
        if (row.times !== undefined) add(row.times, binOf(f.peak));
        if (time < row.first) row.first = time;
        if (time > row.last) row.last = time;
      }
    }
  }
  return [...rows.keys()].sort().map((id) => {
    const { times, counts, ...row } = rows.get(id)!;
    return { ...row, hist: json(times), nhist: json(counts) };
  });
}

/** A row's values in SUM_COLUMNS' order. */
export const sumValues = (r: SumRow): unknown[] => [r.span, r.bucket, r.kind, r.key, r.route, r.line, r.requests, r.n, r.ms, r.peak, r.bad, r.flagged, r.first, r.last, r.shown, r.hist, r.nhist];

/** What an upsert sets on a row already there (`merge` sums two JSON counts in the engine's SQL): the same on both stores. */
export function onConflict(merge: (column: string) => string): string {
  return `ON CONFLICT (span, bucket, kind, key, route, line) DO UPDATE SET
    requests = insight_sums.requests + excluded.requests, n = insight_sums.n + excluded.n, ms = insight_sums.ms + excluded.ms,
    shown = CASE WHEN excluded.peak >= insight_sums.peak THEN excluded.shown ELSE insight_sums.shown END,
    peak = CASE WHEN excluded.peak > insight_sums.peak THEN excluded.peak ELSE insight_sums.peak END,
    bad = insight_sums.bad + excluded.bad, flagged = insight_sums.flagged + excluded.flagged,
    first = CASE WHEN excluded.first < insight_sums.first THEN excluded.first ELSE insight_sums.first END,
    last = CASE WHEN excluded.last > insight_sums.last THEN excluded.last ELSE insight_sums.last END,
    hist = ${merge('hist')}, nhist = ${merge('nhist')}`;
}

/**
 * Retention's part, given the time of the newest profile it deleted: every bucket that began by
 * then goes (the profiles it held may have been deleted), and the horizon moves there: nothing up
 * to it is read again (a bucket some late profile opens there later included).
 */
export const FORGET_SQL = `DELETE FROM insight_sums WHERE span IN (${HORIZON}, ${MINUTE}, ${HOUR}) AND bucket <= ?`;
export const HORIZON_SQL = `INSERT INTO insight_sums (${SUM_COLUMNS}) VALUES (${HORIZON}, ?, '', '', '', '', 0, 0, 0, 0, 0, 0, 0, 0, '', NULL, NULL)
  ON CONFLICT (span, bucket, kind, key, route, line) DO NOTHING`;

/** Sums wait this long at most: a busy writer adds to each bucket once a second, not once a batch. */
export const SUMS_EVERY_MS = 1_000;
/** Profiles whose sums may wait at once: past it they are written with the next batch. */
const MAX_WAITING = 5_000;

/**
 * The profiles stored but not summed yet, on the writer's side. Their sums go in a later batch's
 * transaction, or one of their own: retention's horizon keeps that exact (a profile deleted in
 * between is older than the horizon, and so are the buckets it would add to, which are never read).
 */
export class WaitingSums {
  private waiting: Counted[] = [];
  /** How many of `waiting` a committed transaction stored: the rest came with one that failed. */
  private confirmed = 0;
  private oldest = 0;

  /**
   * For one transaction: `add` gives the sums it writes, given the profiles it stores (those of all
   * that wait, with them, when due or `now`; else none), and `committed` is called once it did:
   * a transaction that failed added nothing (the next one drops what it brought).
   */
  forTransaction(now: boolean): { add: (counted: Counted[]) => SumRow[]; committed: () => void } {
    let next: (() => void) | undefined;
    return {
      add: (counted) => {
        const at = Date.now();
        // Added in place (a copy a batch would cost as much as all that waits): what a failed transaction added goes first.
        this.waiting.length = this.confirmed;
        if (this.confirmed === 0) this.oldest = at;
        for (const c of counted) this.waiting.push(c);
        const due = this.waiting.length > 0 && (now || at - this.oldest >= SUMS_EVERY_MS || this.waiting.length >= MAX_WAITING);
        next = () => {
          if (due) this.waiting = [];
          this.confirmed = this.waiting.length;
        };
        return due ? sumsOf(this.waiting) : [];
      },
      committed: () => next?.(),
    };
  }

  /** Milliseconds until what waits is due, or undefined when nothing waits. */
  dueIn(at = Date.now()): number | undefined {
    return this.confirmed === 0 ? undefined : Math.max(0, this.oldest + SUMS_EVERY_MS - at);
  }
}
