import { ROUTE_ERROR, ROUTE_N_PLUS_ONE, type FactKind } from '../redaction/facts.js';
import type { ProfileReader } from './reader.js';

/**
 * Insights across requests, read from the facts the writer stored beside each profile (see
 * redaction/facts.ts): what costs the most over a period, each row with the profile that shows it.
 * The same SQL on SQLite and PostgreSQL; percentiles are taken here, from one read of the period's
 * request facts.
 */

/** A period, in epoch milliseconds, inclusive. */
export interface Period {
  from: number;
  to: number;
}

export interface RouteRow {
  key: string;
  requests: number;
  p50: number;
  p95: number;
  max: number;
  /** Milliseconds, all its requests together: what the cards are sorted by. */
  total: number;
  errors: number;
  statements: { median: number; max: number };
  nPlusOne: number;
  /** Its slowest request. */
  token?: string;
  /** Requests by duration, for a histogram: counts in HISTOGRAM_EDGES' buckets. */
  histogram: number[];
}

export interface TotalRow {
  kind: FactKind;
  key: string;
  /** Profiles it appears in. */
  requests: number;
  /** Its count over them all: a statement's runs, a call's, a read's, a message's. */
  count: number;
  total: number;
  peak: number;
  bad: number;
  first: number;
  last: number;
  /** A statement's or an error's lines and routes, most first. */
  lines?: string[];
  routes?: string[];
  /** The profile that shows it: its slowest, else its latest. */
  token?: string;
  p95?: number;
}

export interface Insights {
  period: Period;
  requests: number;
  /** Requests over the period, in SPARK_BUCKETS buckets. */
  sparkline: number[];
  routes: RouteRow[];
  commands: RouteRow[];
  statements: TotalRow[];
  failures: TotalRow[];
  calls: TotalRow[];
  cache: TotalRow[];
  missing: TotalRow[];
  warnings: TotalRow[];
  users: RouteRow[];
  /** What costs the most time in total: a route, a statement, a call or a command. */
  fixFirst?: { card: 'routes' | 'statements' | 'calls' | 'commands'; key: string; total: number; token?: string };
}

/** Upper bounds of the duration histogram's buckets, in milliseconds (the last takes the rest). */
export const HISTOGRAM_EDGES = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, Infinity];
export const SPARK_BUCKETS = 30;
/** Rows a card shows. */
export const TOP = 10;

type RowFact = { profile: number; time: number; kind: string; key: string; n: number; ms: number; peak: number; bad: number };

const ROWS_SQL = "SELECT profile, time, kind, key, n, ms, peak, bad FROM facts WHERE kind IN ('route', 'command', 'user', 'call') AND time >= ? AND time <= ?";
/** One scan of the period: each fact's sums by what it is, the route it ran in and its line (merged by key here). */
const TOTALS_SQL = `SELECT kind, key, route, line, CAST(count(*) AS INTEGER) AS requests, CAST(sum(n) AS DOUBLE PRECISION) AS count, CAST(sum(ms) AS DOUBLE PRECISION) AS total,
  max(peak) AS peak, CAST(sum(bad) AS DOUBLE PRECISION) AS bad, CAST(min(time) AS DOUBLE PRECISION) AS first, CAST(max(time) AS DOUBLE PRECISION) AS last
  FROM facts WHERE kind IN ('statement', 'exception', 'refusal', 'cache', 'missing', 'warning') AND time >= ? AND time <= ? GROUP BY kind, key, route, line`;
const SHOWN_BY_SQL = 'SELECT profile FROM facts WHERE kind = ? AND key = ? AND time >= ? AND time <= ? ORDER BY peak DESC, profile DESC LIMIT 1';

const num = (v: unknown): number => (typeof v === 'number' ? v : Number(v));

/** The value at fraction q of sorted numbers (nearest rank). */
export function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

const median = (values: number[]) => quantile([...values].sort((a, b) => a - b), 0.5);
const round = (ms: number) => Math.round(ms * 100) / 100;

/** Facts by their key, in the order their keys first come. */
function byKeyOf(rows: RowFact[]): Map<string, RowFact[]> {
  const byKey = new Map<string, RowFact[]>();
  for (const r of rows) {
    const list = byKey.get(r.key);
    if (list === undefined) byKey.set(r.key, [r]);
    else list.push(r);
  }
  return byKey;
}

/** Request facts grouped by key: each route's (or command's, or user's) times, statements and errors. */
export function routeRows(rows: RowFact[]): (RouteRow & { profile: number })[] {
  return [...byKeyOf(rows)].map(([key, list]) => {
    const times = list.map((r) => num(r.ms)).sort((a, b) => a - b);
    const slowest = list.reduce((a, b) => (num(b.ms) > num(a.ms) ? b : a));
    const histogram = HISTOGRAM_EDGES.map(() => 0);
    for (const t of times) histogram[HISTOGRAM_EDGES.findIndex((edge) => t <= edge)]++;
    const statements = list.map((r) => num(r.n));
    return {
      key,
      requests: list.length,
      p50: round(quantile(times, 0.5)),
      p95: round(quantile(times, 0.95)),
      max: round(times[times.length - 1]),
      total: round(times.reduce((a, b) => a + b, 0)),
      errors: list.filter((r) => (num(r.bad) & ROUTE_ERROR) !== 0).length,
      statements: { median: median(statements), max: statements.reduce((a, b) => Math.max(a, b), 0) },
      nPlusOne: list.filter((r) => (num(r.bad) & ROUTE_N_PLUS_ONE) !== 0).length,
      histogram,
      profile: num(slowest.profile),
    };
  }).sort((a, b) => b.total - a.total);
}

type TotalPart = Omit<TotalRow, 'lines' | 'routes' | 'token' | 'p95'> & { route: string | null; line: string | null };

/** The period's sums by kind, key, route and line, as one row a kind and key, with its routes and lines most first. */
function totalsOf(parts: TotalPart[]): TotalRow[] {
  const byKey = new Map<string, TotalRow & { byRoute: Map<string, number>; byLine: Map<string, number> }>();
  for (const p of parts) {
    const id = `${p.kind}\t${p.key}`;
    let t = byKey.get(id);
    if (t === undefined) byKey.set(id, (t = { kind: p.kind, key: p.key, requests: 0, count: 0, total: 0, peak: 0, bad: 0, first: Infinity, last: 0, byRoute: new Map(), byLine: new Map() }));
    const requests = num(p.requests);
    t.requests += requests;
    t.count += num(p.count);
    t.total += num(p.total);
    t.peak = Math.max(t.peak, num(p.peak));
    t.bad += num(p.bad);
    t.first = Math.min(t.first, num(p.first));
    t.last = Math.max(t.last, num(p.last));
    if (p.route !== null) t.byRoute.set(p.route, (t.byRoute.get(p.route) ?? 0) + requests);
    if (p.line !== null) t.byLine.set(p.line, (t.byLine.get(p.line) ?? 0) + requests);
  }
  const most = (counts: Map<string, number>) => [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, 3).map(([name]) => name);
  return [...byKey.values()].map(({ byRoute, byLine, ...t }) => ({ ...t, total: round(t.total), peak: round(t.peak), routes: most(byRoute), lines: most(byLine) }));
}

/** The tokens of profiles by their row ids. */
export async function tokensOf(store: ProfileReader, ids: number[]): Promise<Map<number, string>> {
  const tokens = new Map<number, string>();
  if (ids.length > 0) for (const r of await store.select<{ id: number; token: string }>(`SELECT id, token FROM profiles WHERE id IN (${ids.map(() => '?').join(', ')})`, ids)) tokens.set(num(r.id), r.token);
  return tokens;
}

/** Every route and every statement of a period, uncapped: what a comparison of two periods reads. */
export async function measuresOf(store: ProfileReader, period: Period): Promise<{ routes: (RouteRow & { profile: number })[]; statements: TotalRow[] }> {
  const args = [period.from, period.to];
  const routes = routeRows(await store.select<RowFact>("SELECT profile, time, kind, key, n, ms, peak, bad FROM facts WHERE kind = 'route' AND time >= ? AND time <= ?", args));
  const statements = totalsOf(await store.select<TotalPart>(TOTALS_SQL, args)).filter((t) => t.kind === 'statement');
  return { routes, statements };
}

/** Calls by endpoint: a request's calls to one are one fact (their count, their sum, the slowest): p95 of the slowest a request made. */
function callRows(rows: RowFact[]): (TotalRow & { profile: number })[] {
  return [...byKeyOf(rows)].map(([key, list]) => {
    const peaks = list.map((r) => num(r.peak)).sort((a, b) => a - b);
    const slowest = list.reduce((a, b) => (num(b.peak) > num(a.peak) ? b : a));
    const times = list.map((r) => num(r.time));
    return {
      kind: 'call' as const,
      key,
      requests: list.length,
      count: list.reduce((a, r) => a + num(r.n), 0),
      total: round(list.reduce((a, r) => a + num(r.ms), 0)),
      peak: round(peaks[peaks.length - 1]),
      p95: round(quantile(peaks, 0.95)),
      bad: list.reduce((a, r) => a + num(r.bad), 0),
      first: times.reduce((a, b) => Math.min(a, b)),
      last: times.reduce((a, b) => Math.max(a, b)),
      profile: num(slowest.profile),
    };
  }).sort((a, b) => b.total - a.total);
}

/** Everything the insights page and MCP's `insights` show of a period. */
export async function insightsOf(store: ProfileReader, period: Period): Promise<Insights> {
  const args = [period.from, period.to];
  const rows = await store.select<RowFact>(ROWS_SQL, args);
  const totals = totalsOf(await store.select<TotalPart>(TOTALS_SQL, args));
  const of = (kind: string) => rows.filter((r) => r.kind === kind);
  const requestRows = [...of('route'), ...of('command')];
  const sparkline = Array.from({ length: SPARK_BUCKETS }, () => 0);
  // A period from the beginning of time ("all") is drawn from its first request.
  const start = period.from > 0 ? period.from : requestRows.reduce((a, r) => Math.min(a, num(r.time)), period.to);
  const span = Math.max(1, period.to - start + 1);
  for (const r of requestRows) sparkline[Math.min(SPARK_BUCKETS - 1, Math.max(0, Math.floor(((num(r.time) - start) / span) * SPARK_BUCKETS)))]++;
  const routes = routeRows(of('route')).slice(0, TOP);
  const commands = routeRows(of('command')).slice(0, TOP);
  const users = routeRows(of('user')).sort((a, b) => b.requests - a.requests).slice(0, TOP);
  const calls = callRows(of('call')).slice(0, TOP);
  const top = (kinds: string[], by: (t: TotalRow) => number) => totals.filter((t) => kinds.includes(t.kind)).sort((a, b) => by(b) - by(a) || a.key.localeCompare(b.key)).slice(0, TOP);
  const statements = top(['statement'], (t) => t.total);
  const failures = top(['exception', 'refusal'], (t) => t.requests);
  const cache = top(['cache'], (t) => t.count);
  const missing = top(['missing'], (t) => t.count);
  const warnings = top(['warning'], (t) => t.count);
  // Each shown row's profile: its slowest (latest, where it has no time); statements' and errors' lines and routes.
  const profiles = new Map<TotalRow | RouteRow, number>();
  for (const list of [routes, commands, users, calls]) for (const r of list as (RouteRow & { profile: number })[]) profiles.set(r, r.profile);
  for (const t of [...statements, ...failures, ...cache, ...missing, ...warnings]) {
    const [shown] = await store.select<{ profile: number }>(SHOWN_BY_SQL, [t.kind, t.key, ...args]);
    if (shown !== undefined) profiles.set(t, num(shown.profile));
    if (t.kind !== 'statement' && t.kind !== 'exception' && t.kind !== 'refusal') {
      delete t.lines;
      delete t.routes;
    }
  }
  const tokens = await tokensOf(store, [...new Set(profiles.values())]);
  for (const [row, id] of profiles) {
    row.token = tokens.get(id);
    delete (row as { profile?: number }).profile;
  }
  const candidates = [
    ...routes.map((r) => ({ card: 'routes' as const, key: r.key, total: r.total, token: r.token })),
    ...statements.map((r) => ({ card: 'statements' as const, key: r.key, total: r.total, token: r.token })),
    ...calls.map((r) => ({ card: 'calls' as const, key: r.key, total: r.total, token: r.token })),
    ...commands.map((r) => ({ card: 'commands' as const, key: r.key, total: r.total, token: r.token })),
  ];
  const fixFirst = candidates.sort((a, b) => b.total - a.total)[0];
  return { period, requests: requestRows.length, sparkline, routes, commands, statements, failures, calls, cache, missing, warnings, users, fixFirst };
}
