import { plain } from './plain.js';
import type { CallEntry, Inside, MarkEntry } from './inside.js';
import type { CallerFrom } from './inside.js';

export interface ErrorSummary {
  class: string;
  message: string;
  code?: string;
}

/** A statement as it crosses to the writer: plain data, parameters copied within a budget, not yet redacted. */
export interface CapturedQuery {
  driver: string;
  sql: string;
  params: unknown;
  start: number;
  end: number;
  rows?: number;
  error?: ErrorSummary;
  caller?: string;
  callerFrom?: CallerFrom;
  wait?: number;
  /** Its driver kept what EXPLAIN needs (the connection it ran on). */
  explainable?: true;
}

export interface CapturedCall extends Omit<CallEntry, 'error' | 'caller'> {
  error?: ErrorSummary;
  caller?: string;
}

/** What ran inside a request, as plain data. */
export interface CapturedInside {
  queries: CapturedQuery[];
  queryCount: number;
  queryTime: number;
  calls: CapturedCall[];
  callCount: number;
  marks: MarkEntry[];
}

const MAX_SQL = 16 * 1024;
const PARAMS_BUDGET = 4 * 1024;

export function errorSummary(err: unknown): ErrorSummary {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return { class: err.constructor?.name || err.name, message: err.message, ...(code !== undefined ? { code: String(code) } : {}) };
  }
  return { class: typeof err, message: String(err) };
}

/** Times as the request's clock had them, to the microsecond; a statement still running ends with the request. */
const at = (ms: number, end: number) => Math.round((ms < 0 ? end : ms) * 1000) / 1000;

/** Runs on the request's thread as it finishes: returns the plain copy and roughly its size in bytes. */
export function captureInside(inside: Inside, end: number): { value: CapturedInside; size: number } {
  let size = 256;
  const queries = inside.queries.map((q): CapturedQuery => {
    const sql = q.sql.length > MAX_SQL ? `${q.sql.slice(0, MAX_SQL)}…` : q.sql;
    const c: CapturedQuery = { driver: q.driver, sql, params: q.params === undefined ? undefined : plain(q.params, PARAMS_BUDGET), start: at(q.start, end), end: at(q.end, end) };
    if (q.rows !== undefined) c.rows = q.rows;
    if (q.error !== undefined) c.error = errorSummary(q.error);
    if (q.caller !== undefined) c.caller = q.caller;
    if (q.callerFrom !== undefined) c.callerFrom = q.callerFrom;
    if (q.explain !== undefined) c.explainable = true;
    if (q.wait !== undefined) c.wait = Math.round(q.wait * 1000) / 1000;
    size += 128 + sql.length + (q.params === undefined ? 0 : 256) + (q.caller?.length ?? 0);
    return c;
  });
  const calls = inside.calls.map((call): CapturedCall => {
    size += 512 + call.url.length;
    const { error, caller, ...rest } = call;
    return {
      ...rest,
      start: at(call.start, end),
      end: at(call.end, end),
      requestHeaders: plain(call.requestHeaders, PARAMS_BUDGET),
      responseHeaders: plain(call.responseHeaders, PARAMS_BUDGET),
      ...(error !== undefined ? { error: errorSummary(error) } : {}),
      ...(caller !== undefined ? { caller } : {}),
    };
  });
  const marks = inside.marks.map((m) => ({ ...m, start: at(m.start, end), end: at(m.end, end) }));
  size += marks.length * 96;
  return {
    value: { queries, queryCount: inside.queryCount, queryTime: at(inside.queryTime, end), calls, callCount: inside.callCount, marks },
    size,
  };
}
