import type { Span } from '../recording/context.js';
import type { Collector } from './collector.js';

export interface PerformanceData {
  /** Milliseconds. */
  total: number;
  ttfb: number;
  /** Resident set size of the process when the response finished, in bytes. */
  rss: number;
  spans: Span[];
}

const round = (ms: number) => Math.round(ms * 1000) / 1000;

export const performance: Collector<PerformanceData> = {
  id: 'performance',
  title: 'Performance',
  collect: (ctx) => ({
    total: round(ctx.end),
    ttfb: round(ctx.ttfb),
    rss: ctx.rss,
    spans: ctx.spans.map((s) => ({ ...s, start: round(s.start), end: round(s.end) })),
  }),
  badge: (data) => `${Math.round(data.total)} ms`,
};
