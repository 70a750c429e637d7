import { HISTOGRAM_EDGES, measuresOf, slowerThan, type Period } from '../storage/insights.js';
import type { ProfileReader } from '../storage/reader.js';
import { parseTime } from './search-params.js';

export type PeriodName = 'hour' | 'day' | 'start' | 'all';

/** A period the page and MCP read: a name, or two times read as the search reads them. */
export type ParsedPeriod = { ok: true; period: Period; name: PeriodName | 'range'; compare?: number; form: Record<string, string> } | { ok: false; error: string };

const one = (value: unknown): string | undefined => (typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined);

/** `?period=hour|day|start|all` (default: since the app started; all for a reader with no app, `started` null), or `?start=&end=`; `?compare=<time>`. */
export function parsePeriod(query: Record<string, unknown>, now: number, started: number | null): ParsedPeriod {
  const form: Record<string, string> = {};
  const start = one(query.start);
  const end = one(query.end);
  let period: Period;
  let name: PeriodName | 'range';
  if (start !== undefined || end !== undefined) {
    const from = start === undefined ? 0 : parseTime(start);
    const to = end === undefined ? now : parseTime(end);
    if (from === undefined) return { ok: false, error: 'start: a date such as 2026-11-21T10:00, or epoch milliseconds.' };
    if (to === undefined) return { ok: false, error: 'end: a date such as 2026-11-21T10:00, or epoch milliseconds.' };
    if (start !== undefined) form.start = start;
    if (end !== undefined) form.end = end;
    if (from > to) return { ok: false, error: 'start: before end.' };
    period = { from, to };
    name = 'range';
  } else {
    const given = one(query.period) ?? (started === null ? 'all' : 'start');
    if (!['hour', 'day', 'start', 'all'].includes(given)) return { ok: false, error: 'period: hour, day, start (since the app started) or all.' };
    name = given as PeriodName;
    form.period = given;
    const from = name === 'hour' ? now - 3_600_000 : name === 'day' ? now - 86_400_000 : name === 'start' ? (started ?? 0) : 0;
    period = { from, to: now };
  }
  const compare = one(query.compare);
  if (compare === undefined) return { ok: true, period, name, form };
  // "start": before the app started against since, in a period that began before it (all, a day).
  const at = compare === 'start' ? (started ?? undefined) : parseTime(compare);
  if (at === undefined || at <= period.from || at >= period.to) return { ok: false, error: 'compare: a time inside the period (the period before it against the one after), or "start" (the app\'s start) in a period that began before it, such as period=all.' };
  form.compare = compare;
  return { ok: true, period, name, compare: at, form };
}

/** A change between two periods, flagged where it grew beyond noise. */
export interface Regression {
  kind: 'route' | 'statement';
  key: string;
  metric: 'p50' | 'p95' | 'statements a request' | 'runs a request';
  before: number;
  after: number;
  flagged: boolean;
  /** The slowest request of the later period. */
  token?: string;
}

/** Fewer requests than this on either side say nothing of a change. */
const MIN_REQUESTS = 3;
/** A p95 of fewer requests is its slowest one or two: one pause would flag it. */
const MIN_FOR_P95 = 20;
/** A time grew beyond noise: by a quarter, and by 2 ms at least. */
const grewTime = (before: number, after: number) => after > before * 1.25 && after - before >= 2;
/** A p95 grew when that many requests at least took longer than the earlier one grown beyond noise: two pauses move a p95 of 20. */
const MIN_SLOWER = 3;
/** A count a request grew beyond noise: by one at least. */
const grewCount = (before: number, after: number) => after - before >= 1;

/** Each route's p50, p95 and statements a request, and each statement's runs a request, before `at` and from it on: every one, not only the top rows. */
export async function regressionsOf(store: ProfileReader, period: Period, at: number): Promise<Regression[]> {
  const [before, after] = await Promise.all([measuresOf(store, { from: period.from, to: at - 1 }), measuresOf(store, { from: at, to: period.to })]);
  const out: Regression[] = [];
  const earlier = new Map(before.routes.map((r) => [r.key, r]));
  for (const a of after.routes) {
    const b = earlier.get(a.key);
    if (b === undefined || a.requests < MIN_REQUESTS || b.requests < MIN_REQUESTS) continue;
    const compared = (metric: Regression['metric'], was: number, is: number, flagged: boolean) => out.push({ kind: 'route', key: a.key, metric, before: was, after: is, flagged, ...(flagged ? { token: a.token } : {}) });
    compared('p50', b.p50, a.p50, grewTime(b.p50, a.p50));
    if (a.requests >= MIN_FOR_P95 && b.requests >= MIN_FOR_P95) compared('p95', b.p95, a.p95, grewTime(b.p95, a.p95) && slowerThan(a.times, Math.max(b.p95 * 1.25, b.p95 + 2)) >= MIN_SLOWER);
    compared('statements a request', b.statements.median, a.statements.median, grewCount(b.statements.median, a.statements.median));
  }
  const runs = (s: { count: number; requests: number }) => round(s.count / Math.max(1, s.requests));
  const was = new Map(before.statements.map((s) => [s.key, s]));
  for (const a of after.statements) {
    const b = was.get(a.key);
    if (b === undefined || a.requests < MIN_REQUESTS || b.requests < MIN_REQUESTS) continue;
    out.push({ kind: 'statement', key: a.key, metric: 'runs a request', before: runs(b), after: runs(a), flagged: grewCount(runs(b), runs(a)) });
  }
  return out.sort((x, y) => Number(y.flagged) - Number(x.flagged));
}

const round = (n: number) => Math.round(n * 100) / 100;

/** A small bar chart (server-made SVG, no script): one bar a value, scaled to the largest. */
export function barsSvg(values: number[], label: string, width = 120, height = 28): string {
  const most = Math.max(1, ...values);
  const w = width / values.length;
  const bars = values.map((v, i) => {
    const h = v === 0 ? 0 : Math.max(1, Math.round((v / most) * (height - 2)));
    return `<rect x="${(i * w + 0.5).toFixed(1)}" y="${height - h}" width="${Math.max(1, w - 1).toFixed(1)}" height="${h}"><title>${v}</title></rect>`;
  }).join('');
  return `<svg class="bars" role="img" aria-label="${label}" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}">${bars}</svg>`;
}

/** A route's histogram's label: what each bar counts. */
export const histogramLabel = (counts: number[]): string =>
  `Requests by time: ${counts.map((n, i) => (n === 0 ? '' : `${n} ${i === 0 ? 'up to' : i === counts.length - 1 ? 'over' : 'up to'} ${HISTOGRAM_EDGES[i === counts.length - 1 ? i - 1 : i]} ms`)).filter(Boolean).join(', ')}`;

/** The answer of one period, kept a few seconds: a page read again (a reload, MCP after it) is not counted again. */
export function insightsCache(ttlMs = 10_000) {
  const kept = new Map<string, { at: number; value: Promise<unknown> }>();
  return function cached<T>(key: string, make: () => Promise<T>): Promise<T> {
    const now = Date.now();
    for (const [k, v] of kept) if (now - v.at > ttlMs) kept.delete(k);
    const hit = kept.get(key);
    if (hit !== undefined) return hit.value as Promise<T>;
    const value = make();
    kept.set(key, { at: now, value });
    value.catch(() => kept.delete(key));
    return value;
  };
}
