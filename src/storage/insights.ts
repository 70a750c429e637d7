import type { FactKind } from '../redaction/facts.js';
import { BIN_EDGES, HORIZON, HOUR, MINUTE, SUM_COLUMNS, type SumRow } from './insight-sums.js';
import type { ProfileReader } from './reader.js';

/**
 * Insights across requests, read from the sums the writer keeps by the minute and the hour (see
 * insight-sums.ts): what costs the most over a period, each row with the profile that shows it.
 * The same SQL on SQLite and PostgreSQL; the rows of a kind and key are summed here, percentiles
 * taken from their times' bins.
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
  token: string;
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
  token: string;
  p95?: number;
}

export interface Insights {
  period: Period;
  /** When counting starts, where retention deleted what came before the period's start (see insight-sums.ts). */
  countedFrom?: number;
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

// Past the horizon as it is when the rows are read: retention may have moved it since it was read below.
const SPAN_SQL = `SELECT ${SUM_COLUMNS} FROM insight_sums WHERE span = ? AND bucket >= ? AND bucket <= ?
  AND bucket > (SELECT coalesce(max(bucket), -1) FROM insight_sums WHERE span = ${HORIZON})`;
const HORIZON_READ = `SELECT max(bucket) AS horizon FROM insight_sums WHERE span = ${HORIZON}`;

const num = (v: unknown): number => (typeof v === 'number' ? v : Number(v));
const round = (ms: number) => Math.round(ms * 100) / 100;

/**
 * The sums of a period: its whole hours from the hours' rows, the rest by the minute (a minute is
 * in the period when it starts in it), from the first minute after the horizon retention left.
 */
export async function sumsIn(store: ProfileReader, period: Period): Promise<{ rows: SumRow[]; from: number }> {
  const [{ horizon }] = await store.select<{ horizon: number | null }>(HORIZON_READ, []);
  const from = horizon === null ? period.from : Math.max(period.from, num(horizon) - (num(horizon) % MINUTE) + MINUTE);
  const to = period.to;
  if (from > to) return { rows: [], from };
  const read = (span: number, first: number, last: number) => store.select<SumRow>(SPAN_SQL, [span, first, last]);
  const hours = Math.ceil(from / HOUR) * HOUR;
  const after = Math.floor((to + 1) / HOUR) * HOUR;
  if (hours >= after) return { rows: await read(MINUTE, from, to), from };
  return { rows: (await Promise.all([read(MINUTE, from, hours - 1), read(HOUR, hours, after - 1), read(MINUTE, after, to)])).flat(), from };
}

/** Rows of one kind by key, in the order their keys first come. */
function byKeyOf(rows: SumRow[]): Map<string, SumRow[]> {
  const byKey = new Map<string, SumRow[]>();
  for (const r of rows) {
    const list = byKey.get(r.key);
    if (list === undefined) byKey.set(r.key, [r]);
    else list.push(r);
  }
  return byKey;
}

/** JSON counts (`{ "bin": n }`) of rows summed. */
function countsOf(rows: SumRow[], column: 'hist' | 'nhist'): [number, number][] {
  const counts = new Map<number, number>();
  for (const r of rows) {
    const text = r[column];
    if (text) for (const [at, n] of Object.entries(JSON.parse(text) as Record<string, number>)) counts.set(Number(at), (counts.get(Number(at)) ?? 0) + num(n));
  }
  return [...counts].sort((a, b) => a[0] - b[0]);
}

/** The count at fraction q of sorted counts (nearest rank): its position. */
function quantileOf(counts: [number, number][], q: number): number {
  const total = counts.reduce((a, [, n]) => a + n, 0);
  let seen = 0;
  for (const [at, n] of counts) if ((seen += n) >= Math.max(1, Math.ceil(q * total))) return at;
  return 0;
}

/** A time's quantile: its bin's upper bound, never past the slowest. */
const timeAt = (bins: [number, number][], q: number, max: number) => round(Math.min(BIN_EDGES[quantileOf(bins, q)], max));

/** The row that shows a group: its slowest, the latest of equals. */
const shownOf = (list: SumRow[]) => list.reduce((a, b) => (num(b.peak) > num(a.peak) || (num(b.peak) === num(a.peak) && num(b.last) > num(a.last)) ? b : a));

/** When a group was first and last seen. */
const seenOf = (list: SumRow[]) => ({ first: list.reduce((a, r) => Math.min(a, num(r.first)), Infinity), last: list.reduce((a, r) => Math.max(a, num(r.last)), 0) });

const sum = (list: SumRow[], column: 'requests' | 'n' | 'ms' | 'bad' | 'flagged') => list.reduce((a, r) => a + num(r[column]), 0);

/** A route's times: counts by bin of BIN_EDGES, fastest first. */
export type Times = [number, number][];

/** Requests of times wholly slower than `ms` (bins that start past it). */
export const slowerThan = (times: Times, ms: number): number => times.reduce((a, [bin, n]) => a + (bin > 0 && BIN_EDGES[bin - 1] >= ms ? n : 0), 0);

/** Each route's (or command's, or user's) requests, times, statements and errors. */
export function routeRows(rows: SumRow[]): (RouteRow & { times: Times })[] {
  return [...byKeyOf(rows)].map(([key, list]) => {
    const shown = shownOf(list);
    const max = num(shown.peak);
    const times = countsOf(list, 'hist');
    const statements = countsOf(list, 'nhist');
    const histogram = HISTOGRAM_EDGES.map(() => 0);
    for (const [bin, n] of times) histogram[HISTOGRAM_EDGES.findIndex((edge) => BIN_EDGES[bin] <= edge)] += n;
    return {
      key,
      requests: sum(list, 'requests'),
      p50: timeAt(times, 0.5, max),
      p95: timeAt(times, 0.95, max),
      max: round(max),
      total: round(sum(list, 'ms')),
      errors: sum(list, 'bad'),
      statements: { median: quantileOf(statements, 0.5), max: statements.length === 0 ? 0 : statements[statements.length - 1][0] },
      nPlusOne: sum(list, 'flagged'),
      histogram,
      token: shown.shown,
      times,
    };
  }).sort((a, b) => b.total - a.total);
}

/** Calls by endpoint: a request's calls to one are one fact (their count, their sum, the slowest): p95 of the slowest a request made. */
function callRows(rows: SumRow[]): TotalRow[] {
  return [...byKeyOf(rows)].map(([key, list]) => {
    const shown = shownOf(list);
    return {
      kind: 'call' as const,
      key,
      requests: sum(list, 'requests'),
      count: sum(list, 'n'),
      total: round(sum(list, 'ms')),
      peak: round(num(shown.peak)),
      p95: timeAt(countsOf(list, 'hist'), 0.95, num(shown.peak)),
      bad: sum(list, 'bad'),
      ...seenOf(list),
      token: shown.shown,
    };
  }).sort((a, b) => b.total - a.total);
}

/** Each kind and key of the rest as one row, with the routes and lines it was seen in, most first. */
function totalsOf(rows: SumRow[]): TotalRow[] {
  const byKind = new Map<string, SumRow[]>();
  for (const r of rows) (byKind.get(r.kind) ?? byKind.set(r.kind, []).get(r.kind)!).push(r);
  const most = (list: SumRow[], by: 'route' | 'line') => {
    const counts = new Map<string, number>();
    for (const r of list) if (r[by] !== '') counts.set(r[by], (counts.get(r[by]) ?? 0) + num(r.requests));
    return [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, 3).map(([name]) => name);
  };
  return [...byKind.values()].flatMap((ofKind) => [...byKeyOf(ofKind)].map(([key, list]) => {
    const shown = shownOf(list);
    const row: TotalRow = {
      kind: shown.kind as FactKind,
      key,
      requests: sum(list, 'requests'),
      count: sum(list, 'n'),
      total: round(sum(list, 'ms')),
      peak: round(num(shown.peak)),
      bad: sum(list, 'bad'),
      ...seenOf(list),
      token: shown.shown,
    };
    // Where a statement ran and an error was thrown; other kinds' rows name no line, and their routes are not shown.
    if (row.kind === 'statement' || row.kind === 'exception' || row.kind === 'refusal') Object.assign(row, { routes: most(list, 'route'), lines: most(list, 'line') });
    return row;
  }));
}

/** Every route and every statement of a period, uncapped: what a comparison of two periods reads. */
export async function measuresOf(store: ProfileReader, period: Period): Promise<{ routes: (RouteRow & { times: Times })[]; statements: TotalRow[] }> {
  const { rows } = await sumsIn(store, period);
  return { routes: routeRows(rows.filter((r) => r.kind === 'route')), statements: totalsOf(rows.filter((r) => r.kind === 'statement')) };
}

/** Everything the insights page and MCP's `insights` show of a period. */
export async function insightsOf(store: ProfileReader, period: Period): Promise<Insights> {
  const { rows, from } = await sumsIn(store, period);
  const of = (...kinds: string[]) => rows.filter((r) => kinds.includes(r.kind));
  // Requests over the period: an hour's in the sparkline's bucket of its middle.
  const requestRows = of('route', 'command');
  const sparkline = Array.from({ length: SPARK_BUCKETS }, () => 0);
  // A period from the beginning of time ("all") is drawn from its first request.
  const start = period.from > 0 ? period.from : requestRows.reduce((a, r) => Math.min(a, num(r.first)), period.to);
  const span = Math.max(1, period.to - start + 1);
  for (const r of requestRows) {
    const at = num(r.span) === HOUR ? num(r.bucket) + HOUR / 2 : num(r.bucket);
    sparkline[Math.min(SPARK_BUCKETS - 1, Math.max(0, Math.floor(((at - start) / span) * SPARK_BUCKETS)))] += num(r.requests);
  }
  const shown = (list: (RouteRow & { times: Times })[]): RouteRow[] => list.slice(0, TOP).map(({ times: _times, ...r }) => r);
  const routes = shown(routeRows(of('route')));
  const commands = shown(routeRows(of('command')));
  const users = shown(routeRows(of('user')).sort((a, b) => b.requests - a.requests));
  const calls = callRows(of('call')).slice(0, TOP);
  const totals = totalsOf(of('statement', 'exception', 'refusal', 'cache', 'missing', 'warning'));
  const top = (kinds: string[], by: (t: TotalRow) => number) => totals.filter((t) => kinds.includes(t.kind)).sort((a, b) => by(b) - by(a) || a.key.localeCompare(b.key)).slice(0, TOP);
  const statements = top(['statement'], (t) => t.total);
  const candidates = [
    ...routes.map((r) => ({ card: 'routes' as const, key: r.key, total: r.total, token: r.token })),
    ...statements.map((r) => ({ card: 'statements' as const, key: r.key, total: r.total, token: r.token })),
    ...calls.map((r) => ({ card: 'calls' as const, key: r.key, total: r.total, token: r.token })),
    ...commands.map((r) => ({ card: 'commands' as const, key: r.key, total: r.total, token: r.token })),
  ];
  return {
    period,
    ...(from > period.from ? { countedFrom: from } : {}),
    requests: sum(requestRows, 'requests'),
    sparkline,
    routes,
    commands,
    statements,
    failures: top(['exception', 'refusal'], (t) => t.requests),
    calls,
    cache: top(['cache'], (t) => t.count),
    missing: top(['missing'], (t) => t.count),
    warnings: top(['warning'], (t) => t.count),
    users,
    fixFirst: candidates.sort((a, b) => b.total - a.total)[0],
  };
}
