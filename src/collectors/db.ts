import { N_PLUS_ONE } from '../redaction/facts.js';
import type { ErrorSummary } from '../recording/inside-capture.js';
import type { RecordedQuery } from '../redaction/record.js';
import type { CorePanel } from './collector.js';
import { afterResponse, duration, layerAt, type AfterResponse } from './inside-layers.js';
import { runnableSql } from '../redaction/sql.js';
import { MAX_CALLERS } from '../recording/inside.js';

export interface QueryData {
  /** Its number in the request, from 0: the EXPLAIN link's. */
  n: number;
  driver: string;
  sql: string;
  params: unknown;
  /** The statement with its parameters written in; redacted ones keep their placeholders. */
  runnable: string;
  /** Milliseconds since the request arrived, and taken. */
  start: number;
  duration: number;
  /** Milliseconds spent waiting for a pooled connection first. */
  wait?: number;
  rows?: number;
  error?: ErrorSummary;
  caller?: string;
  /** The app's lines that led to the caller's, innermost first: a wrapper's caller, the route. */
  via?: string[];
  /** Run after the response went out, or ended after it: see AfterResponse. */
  after?: AfterResponse;
  /**
   * Where `caller` came from when the statement's own stack held none of the app's lines: the line
   * that answered (`response`), or the route handler's name (`handler`). With no caller at all:
   * it ran from a callback of a library's own (`callback`; a transaction's COMMIT), after the
   * response went out (`after`; a session store's touch), or past the statements whose line is
   * looked for (`unsought`).
   */
  callerFrom?: 'response' | 'handler' | 'callback' | 'after' | 'unsought';
  layer?: string;
  slow: boolean;
  /** Run ≥ N_PLUS_ONE times from this caller line: a likely N+1. */
  nPlusOne: boolean;
  /** Its group in `groups`. */
  group: number;
  /** A SELECT: the panel offers EXPLAIN (which works while the app keeps the connection open). */
  explainable: boolean;
}

export interface QueryGroup {
  sql: string;
  count: number;
  time: number;
  /** The same statement with the same parameters, run again. */
  duplicates: number;
  nPlusOne: boolean;
  callers: { caller: string; count: number }[];
}

export interface DbData {
  count: number;
  time: number;
  queries: QueryData[];
  /** Statements past the per-request cap: counted and timed, not shown. */
  omitted: number;
  groups: QueryGroup[];
  /** Groups flagged as likely N+1. */
  nPlusOne: number;
  slow: number;
  errors: number;
  slowThreshold: number;
  /** The one line every statement ran from, when three different ones or more did: likely the app's own wrapper (see skipFrames). */
  oneCaller?: string;
}

const SELECT = /^\s*(select|with)\b/i;
const NONE_HIDDEN = { indexes: [], names: [] };

/**
 * The request's database statements: each redacted (literals and parameters of secret-looking
 * columns, like every other value), timed, placed under the layer that ran it, grouped by
 * statement, with likely N+1 loops flagged.
 */
export const db: CorePanel<DbData> = {
  id: 'db',
  title: 'Database',
  collect(s, options) {
    const inside = s.inside;
    if (inside === undefined || inside.queryCount === 0) return undefined;
    const groups = new Map<string, QueryGroup & { index: number; seen: Map<string, number>; byCaller: Map<string, number> }>();
    const queries = inside.queries.map((q: RecordedQuery, n): QueryData => {
      const took = duration(q.start, q.end);
      let group = groups.get(q.sql);
      if (group === undefined) {
        group = { index: groups.size, sql: q.sql, count: 0, time: 0, duplicates: 0, nPlusOne: false, callers: [], seen: new Map(), byCaller: new Map() };
        groups.set(q.sql, group);
      }
      group.count++;
      group.time += took;
      const same = JSON.stringify(q.params ?? null);
      const seen = group.seen.get(same) ?? 0;
      if (seen > 0) group.duplicates++;
      group.seen.set(same, seen + 1);
      const caller = q.caller ?? '(unknown)';
      group.byCaller.set(caller, (group.byCaller.get(caller) ?? 0) + 1);
      const data: QueryData = {
        n,
        driver: q.driver,
        sql: q.sql,
        params: q.params,
        runnable: runnableSql(q.sql, q.params, q.hidden ?? NONE_HIDDEN),
        start: q.start,
        duration: took,
        slow: took >= options.slowQuery,
        nPlusOne: false,
        group: group.index,
        // Offered only where it can run: a SELECT that succeeded, on a connection its driver named.
        explainable: q.explainable === true && SELECT.test(q.sql) && q.error === undefined,
      };
      if (q.wait !== undefined) data.wait = q.wait;
      if (q.rows !== undefined) data.rows = q.rows;
      if (q.error !== undefined) data.error = q.error;
      if (q.caller !== undefined) data.caller = q.caller;
      if (q.via !== undefined) data.via = q.via;
      const after = afterResponse(q.start, q.end, s.duration);
      if (after !== undefined) data.after = after;
      if (q.callerFrom !== undefined) data.callerFrom = q.callerFrom;
      // The line that answered was read as the head went out: a statement with none that began after it ran from what followed the answer.
      else if (q.caller === undefined) data.callerFrom = n >= MAX_CALLERS ? 'unsought' : q.start >= s.ttfb ? 'after' : 'callback';
      const layer = layerAt(s.spans, q.start);
      if (layer !== undefined) data.layer = layer;
      return data;
    });
    const list = [...groups.values()].map(({ index, seen, byCaller, ...g }) => {
      const callers = [...byCaller].map(([caller, count]) => ({ caller, count })).sort((a, b) => b.count - a.count);
      // A caller that is not known (a pool that runs the statement in a callback of its own) counts as one line: a statement repeated that often is the same smell.
      return { ...g, time: Math.round(g.time * 1000) / 1000, callers, nPlusOne: callers.some((c) => c.count >= N_PLUS_ONE) };
    });
    for (const q of queries) q.nPlusOne = list[q.group].nPlusOne && (list[q.group].callers.find((c) => c.caller === (q.caller ?? '(unknown)'))?.count ?? 0) >= N_PLUS_ONE;
    const callers = new Set(queries.map((q) => (q.callerFrom === undefined ? q.caller : undefined)));
    const [only] = callers;
    return {
      ...(list.length >= 3 && callers.size === 1 && only !== undefined ? { oneCaller: only } : {}),
      count: inside.queryCount,
      time: inside.queryTime,
      queries,
      omitted: inside.queryCount - queries.length,
      groups: list,
      nPlusOne: list.filter((g) => g.nPlusOne).length,
      slow: queries.filter((q) => q.slow).length,
      errors: queries.filter((q) => q.error !== undefined).length,
      slowThreshold: options.slowQuery,
    };
  },
  badge: (data) => (data.nPlusOne > 0 ? `${data.count} · N+1` : data.count),
};
