import type { Span } from '../recording/context.js';
import type { Snapshot } from './snapshot.js';
import type { CorePanel } from './collector.js';
import type { LoopState } from '../recording/loop.js';
import { layerAt } from './inside-layers.js';

/** A row of the timeline: a router layer, or what ran inside one (a query, an HTTP call, a span of the app's). */
export interface TimelineItem {
  name: string;
  kind: Span['kind'] | 'query' | 'http' | 'cache' | 'view' | 'mail' | 'job' | 'ai' | 'span';
  /** Milliseconds since the request arrived. */
  start: number;
  end: number;
  /** 0 for a layer; 1 for what ran in it; more for what ran inside an app's span. */
  depth: number;
  /** Failed (a query or call that errored, a span that threw). */
  error?: boolean;
}

export interface PerformanceData {
  /** Milliseconds. */
  total: number;
  ttfb: number;
  /** Resident set size of the process when the response finished, in bytes. */
  rss: number;
  spans: Span[];
  /** Layers and what ran inside them, when anything did (else the spans say it all, and are not stored twice). */
  timeline?: TimelineItem[];
  /** OpenTelemetry spans (and the app's own spans), with their attributes. */
  traced?: TracedSpan[];
  /** The OpenTelemetry trace it ran under. */
  trace?: { traceId: string; spanId: string };
  /** The event loop as it lived it, and the heap (see recording/loop.ts). */
  loop?: LoopData;
}

export interface LoopData extends Omit<LoopState, 'blocks'> {
  /** Where each of its blocking stretches ran: the layer running at its end. */
  blocks?: (NonNullable<LoopState['blocks']>[number] & { layer?: string })[];
}

export interface TracedSpan {
  name: string;
  scope?: string;
  start: number;
  duration: number;
  error?: boolean;
  attributes?: Record<string, unknown>;
}

const round = (ms: number) => Math.round(ms * 1000) / 1000;
const MAX_NAME = 120;
const short = (name: string) => (name.length > MAX_NAME ? `${name.slice(0, MAX_NAME - 1)}…` : name);

/**
 * Layers in the order they ran, each followed by what started while it ran, in start order;
 * what ran inside an app's span sits one level deeper than the span.
 */
function timelineOf(s: Snapshot): TimelineItem[] | undefined {
  const inner: TimelineItem[] = [];
  const inside = s.inside;
  if (inside === undefined) return undefined;
  for (const q of inside.queries) inner.push({ name: short(q.sql.replace(/\s+/g, ' ').trim()), kind: 'query', start: q.start, end: q.end, depth: 1, ...(q.error ? { error: true } : {}) });
  for (const c of inside.calls) inner.push({ name: short(`${c.method} ${c.url}`), kind: 'http', start: c.start, end: c.end, depth: 1, ...(c.error || (c.status ?? 0) >= 500 ? { error: true } : {}) });
  for (const c of inside.commands ?? []) inner.push({ name: short(c.commands ? `${c.command} (${c.commands.length || c.size || 0} commands)` : [c.command, ...c.args].join(' ')), kind: 'cache', start: c.start, end: c.end, depth: 1, ...(c.error ? { error: true } : {}) });
  for (const r of inside.renders ?? []) inner.push({ name: short(`render ${r.name}`), kind: 'view', start: r.start, end: r.end, depth: 1, ...(r.error ? { error: true } : {}) });
  for (const m of inside.mails ?? []) inner.push({ name: short(`mail ${m.message.subject ?? ''}`), kind: 'mail', start: m.start, end: m.end, depth: 1, ...(m.error ? { error: true } : {}) });
  for (const q of inside.queued ?? []) inner.push({ name: short(`queue ${q.queue}${q.name ? ` ${q.name}` : ''}${q.ids.length ? ` #${q.ids.join(', #')}` : ''}`), kind: 'job', start: q.start, end: q.end, depth: 1, ...(q.error ? { error: true } : {}) });
  for (const c of inside.ai ?? []) inner.push({ name: short(`${c.library === 'ai' ? 'ai SDK' : c.library} ${c.model ?? ''} ${c.operation ?? ''}`.trim()), kind: 'ai', start: c.start, end: c.end, depth: 1, ...(c.error ? { error: true } : {}) });
  for (const m of inside.marks) inner.push({ name: short(m.name), kind: 'span', start: m.start, end: m.end, depth: 1, ...(m.error ? { error: true } : {}) });
  inner.sort((a, b) => a.start - b.start || b.end - a.end);
  const open: TimelineItem[] = [];
  for (const item of inner) {
    while (open.length > 0 && !(item.start >= open[open.length - 1].start && item.end <= open[open.length - 1].end)) open.pop();
    item.depth = 1 + open.length;
    if (item.kind === 'span' || item.kind === 'view' || item.kind === 'ai') open.push(item);
  }
  const rows: TimelineItem[] = [];
  let next = 0;
  s.spans.forEach((layer, i) => {
    rows.push({ name: layer.name, kind: layer.kind, start: layer.start, end: layer.end, depth: 0 });
    const until = i + 1 < s.spans.length ? s.spans[i + 1].start : Infinity;
    while (next < inner.length && inner[next].start < until) rows.push(inner[next++]);
  });
  while (next < inner.length) rows.push(inner[next++]);
  return rows;
}

export const performance: CorePanel<PerformanceData> = {
  id: 'performance',
  title: 'Performance',
  collect(s) {
    const data: PerformanceData = { total: round(s.duration), ttfb: round(s.ttfb), rss: s.rss, spans: s.spans };
    const timeline = timelineOf(s);
    if (timeline !== undefined) data.timeline = timeline;
    // Spans are stored as they end: shown as they started.
    const traced = s.inside?.marks.filter((m) => m.scope !== undefined || m.attributes !== undefined).sort((a, b) => a.start - b.start);
    if (traced !== undefined && traced.length > 0) {
      data.traced = traced.map((m) => ({ name: m.name, ...(m.scope ? { scope: m.scope } : {}), start: m.start, duration: round(m.end - m.start), ...(m.error ? { error: true } : {}), ...(m.attributes ? { attributes: m.attributes } : {}) }));
    }
    if (s.trace !== undefined) data.trace = s.trace;
    if (s.loop !== undefined) {
      const { blocks, ...rest } = s.loop;
      data.loop = blocks === undefined ? rest : { ...rest, blocks: blocks.map((b) => ({ ...b, layer: layerAt(s.spans, b.start + b.duration) })) };
    }
    return data;
  },
  unpack: (s: Omit<PerformanceData, 'total'> & { total?: number }, summary) => ({ total: s.total ?? summary.duration, ...s }) as PerformanceData,
  badge: (data) => `${Math.round(data.total)} ms`,
};
