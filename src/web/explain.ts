import { adapterNamed } from '../instruments/index.js';
import type { PlanRow } from '../instruments/driver.js';
import type { ExplainRef, QueryEntry } from '../recording/inside.js';
import { REDACTED } from '../redaction/redact.js';

/** Requests whose queries EXPLAIN is asked about: the latest ones of this process, within a budget of bytes. */
const KEPT_REQUESTS = 200;
/** What the kept SQL and parameters may take in all (an app's parameters can be megabytes each), and one query's at most. */
const KEPT_BYTES = 8 * 1024 * 1024;
const QUERY_BYTES = 256 * 1024;

const SELECT = /^\s*(select|with)\b/i;

export type ExplainResult = { ok: true; driver: string; sql: string; plan: PlanRow[] } | { ok: false; reason: string };

/**
 * EXPLAIN by reference: a profile's query number leads to the SQL, parameters and connection the
 * app itself used, held here (on the app's thread, never stored) for the latest requests. Nothing
 * the browser sends is ever run.
 */
interface Kept extends Omit<ExplainRef, 'connection'> {
  /** Weak: a connection the app has let go of is not kept alive for this. */
  connection: WeakRef<object>;
}

const NOT_SELECT = 'Only a SELECT can be explained.';
const TOO_LARGE = `This query cannot be explained: its SQL and parameters were over ${QUERY_BYTES / 1024} KiB, more than the profiler keeps for EXPLAIN.`;
const NO_CONNECTION = 'This query cannot be explained: its driver does not say which connection ran it, and EXPLAIN runs on that connection (better-sqlite3, node:sqlite and pg queries can be explained).';

export class ExplainRegistry {
  /** Per query: what EXPLAIN needs, or why it cannot run; and what each request's take, in bytes. */
  private readonly byToken = new Map<string, { refs: (Kept | string)[]; bytes: number }>();
  private bytes = 0;

  keep(token: string, queries: QueryEntry[]): void {
    if (queries.length === 0) return;
    const weak = new Map<object, WeakRef<object>>();
    const refOf = (c: object) => weak.get(c) ?? weak.set(c, new WeakRef(c)).get(c)!;
    let bytes = 0;
    const refs = queries.map((q): Kept | string => {
      if (!q.explain) return SELECT.test(q.sql) ? NO_CONNECTION : NOT_SELECT;
      const size = q.explain.sql.length + sizeOf(q.explain.params, QUERY_BYTES);
      if (size > QUERY_BYTES) return TOO_LARGE;
      bytes += size;
      return { ...q.explain, connection: refOf(q.explain.connection) };
    });
    this.byToken.set(token, { refs, bytes });
    this.bytes += bytes;
    while (this.byToken.size > KEPT_REQUESTS || this.bytes > KEPT_BYTES) {
      const [oldest, kept] = this.byToken.entries().next().value as [string, { bytes: number }];
      this.byToken.delete(oldest);
      this.bytes -= kept.bytes;
    }
  }

  /**
   * The plan of query `index`, with every value the stored profile hid taken out of it: `stored`
   * is that query as the db panel keeps it (redacted SQL and parameters). PostgreSQL prints bound
   * values in its plans, folded (`lower('X')` as `'x'::text`) or as arrays, so a quoted constant
   * is shown only where the stored statement shows it.
   */
  async explain(token: string, index: number, stored: { sql: string; params: unknown } | undefined): Promise<ExplainResult> {
    const refs = this.byToken.get(token)?.refs;
    if (refs === undefined) {
      return { ok: false, reason: `This request's queries can no longer be explained: only the last ${KEPT_REQUESTS} requests with queries that this instance served can be, while their connections are open.` };
    }
    const ref = refs[index];
    if (ref === undefined) return { ok: false, reason: `This request has no query #${index}.` };
    if (typeof ref === 'string') return { ok: false, reason: ref };
    if (!SELECT.test(ref.sql)) return { ok: false, reason: NOT_SELECT };
    const connection = ref.connection.deref();
    const adapter = adapterNamed(ref.driver);
    if (connection === undefined || adapter?.explain === undefined) return { ok: false, reason: 'This query cannot be explained: its connection is gone.' };
    if (stored === undefined) return { ok: false, reason: 'This query cannot be explained: its profile is not stored (yet, or any more).' };
    try {
      const plan = await adapter.explain(connection, ref.sql, ref.params);
      return { ok: true, driver: ref.driver, sql: stored.sql, plan: scrubbed(plan, ref, stored) };
    } catch (err) {
      return { ok: false, reason: `This query cannot be explained: ${(err as Error)?.message ?? err}` };
    }
  }
}

function scrubbed(plan: PlanRow[], raw: { sql: string; params: unknown }, stored: { sql: string; params: unknown }): PlanRow[] {
  const hidden: string[] = [];
  const shown = new Set<string>();
  pairUp(raw.params, stored.params, (was, is) => {
    if (JSON.stringify(was) === JSON.stringify(is)) {
      if (was !== null && typeof was !== 'object') shown.add(String(was));
    } else textsOf(was, hidden);
  });
  if (hidden.length === 0 && raw.sql === stored.sql) return plan;
  for (const literal of stored.sql.match(QUOTED) ?? []) shown.add(unquote(literal));
  const scrub = (text: string) => {
    let out = text.replace(QUOTED, (literal) => (shown.has(unquote(literal)) ? literal : `'${REDACTED}'`));
    for (const value of hidden) if (value.length > 0) out = out.split(value).join(REDACTED);
    return out;
  };
  return plan.map((row) => ({ ...row, detail: scrub(row.detail) }));
}

const QUOTED = /'(?:[^']|'')*'/g;
const unquote = (literal: string) => literal.slice(1, -1).replace(/''/g, "'");

/** Calls `each` with each raw parameter and what the stored profile keeps of it, positional and named alike. */
function pairUp(raw: unknown, stored: unknown, each: (raw: unknown, stored: unknown) => void): void {
  if (Array.isArray(raw)) {
    const kept = Array.isArray(stored) ? stored : [];
    raw.forEach((v, i) => (isRecord(v) ? pairUp(v, kept[i], each) : each(v, kept[i])));
  } else if (isRecord(raw)) {
    const kept = isRecord(stored) ? stored : {};
    for (const key of Object.keys(raw)) each(raw[key], kept[key]);
  } else if (raw !== undefined) each(raw, stored);
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v) && !ArrayBuffer.isView(v);

function textsOf(value: unknown, into: string[]): void {
  if (value === null || value === undefined) return;
  if (typeof value !== 'object') into.push(String(value));
  else if (Array.isArray(value)) value.forEach((v) => textsOf(v, into));
  else if (ArrayBuffer.isView(value)) return;
  else Object.values(value).forEach((v) => textsOf(v, into));
}

/** About how many bytes a value holds (its texts and bytes, a few for anything else), counted up to `limit` and no further. */
function sizeOf(value: unknown, limit: number): number {
  let size = 0;
  const stack = [value];
  while (stack.length > 0 && size <= limit) {
    const v = stack.pop();
    if (typeof v === 'string') size += v.length;
    else if (ArrayBuffer.isView(v)) size += v.byteLength;
    else if (v !== null && typeof v === 'object') {
      for (const key of Object.keys(v)) {
        size += key.length + 8;
        if (size > limit) break;
        stack.push((v as Record<string, unknown>)[key]);
      }
    } else size += 8;
  }
  return size;
}
