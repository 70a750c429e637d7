import { adapterNamed } from '../instruments/index.js';
import type { PlanRow } from '../instruments/driver.js';
import type { ExplainRef, QueryEntry } from '../recording/inside.js';

/** Requests whose queries EXPLAIN is asked about: the latest ones of this process. */
const KEPT_REQUESTS = 200;

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
const NO_CONNECTION = 'This query cannot be explained: its driver does not say which connection ran it, and EXPLAIN runs on that connection (better-sqlite3 and pg queries can be explained).';

export class ExplainRegistry {
  /** Per query: what EXPLAIN needs, or why it cannot run. */
  private readonly byToken = new Map<string, (Kept | string)[]>();

  keep(token: string, queries: QueryEntry[]): void {
    if (queries.length === 0) return;
    const weak = new Map<object, WeakRef<object>>();
    const refOf = (c: object) => weak.get(c) ?? weak.set(c, new WeakRef(c)).get(c)!;
    this.byToken.set(token, queries.map((q) => (q.explain ? { ...q.explain, connection: refOf(q.explain.connection) } : SELECT.test(q.sql) ? NO_CONNECTION : NOT_SELECT)));
    if (this.byToken.size > KEPT_REQUESTS) this.byToken.delete(this.byToken.keys().next().value as string);
  }

  async explain(token: string, index: number): Promise<ExplainResult> {
    const refs = this.byToken.get(token);
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
    try {
      return { ok: true, driver: ref.driver, sql: ref.sql, plan: await adapter.explain(connection, ref.sql, ref.params) };
    } catch (err) {
      return { ok: false, reason: `This query cannot be explained: ${(err as Error)?.message ?? err}` };
    }
  }
}
