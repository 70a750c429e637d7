import type { Span } from '../recording/context.js';
import { spansOf } from '../recording/layers.js';
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
    spans: spansOf(ctx.trail, ctx.end),
  }),
  badge: (data) => `${Math.round(data.total)} ms`,
};
