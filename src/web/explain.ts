import { adapterNamed } from '../instruments/index.js';
import type { PlanRow } from '../instruments/driver.js';
import type { ExplainRef, QueryEntry } from '../recording/inside.js';

/** Requests whose SELECTs can be explained: the latest ones of this process. */
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

export class ExplainRegistry {
  private readonly byToken = new Map<string, (Kept | undefined)[]>();

  keep(token: string, queries: QueryEntry[]): void {
    if (!queries.some((q) => q.explain !== undefined)) return;
    const weak = new Map<object, WeakRef<object>>();
    const refOf = (c: object) => weak.get(c) ?? weak.set(c, new WeakRef(c)).get(c)!;
    this.byToken.set(token, queries.map((q) => q.explain && { ...q.explain, connection: refOf(q.explain.connection) }));
    if (this.byToken.size > KEPT_REQUESTS) this.byToken.delete(this.byToken.keys().next().value as string);
  }

  async explain(token: string, index: number): Promise<ExplainResult> {
    const refs = this.byToken.get(token);
    if (refs === undefined) {
      return { ok: false, reason: `This request's queries can no longer be explained: only the last ${KEPT_REQUESTS} requests with queries that this instance served can be, while their connections are open.` };
    }
    const ref = refs[index];
    if (ref === undefined || !SELECT.test(ref.sql)) return { ok: false, reason: 'Only a SELECT can be explained.' };
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
