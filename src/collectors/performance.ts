import type { Span } from '../recording/context.js';
import type { CorePanel } from './collector.js';

export interface PerformanceData {
  /** Milliseconds. */
  total: number;
  ttfb: number;
  /** Resident set size of the process when the response finished, in bytes. */
  rss: number;
  spans: Span[];
}

const round = (ms: number) => Math.round(ms * 1000) / 1000;

export const performance: CorePanel<PerformanceData> = {
  id: 'performance',
  title: 'Performance',
  collect: (s) => ({ total: round(s.duration), ttfb: round(s.ttfb), rss: s.rss, spans: s.spans }),
  badge: (data) => `${Math.round(data.total)} ms`,
};
