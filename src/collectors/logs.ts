import type { LogLine, LogLevel } from '../recording/context.js';
import { MAX_LOG_LINES } from '../recording/logger.js';
import type { Collector } from './collector.js';
import { plain } from './plain.js';
import { redactValue } from './redact.js';

export interface LogsData {
  lines: LogLine[];
  counts: Record<LogLevel, number>;
  /** True when the request logged more than MAX_LOG_LINES lines and the rest were dropped. */
  capped: boolean;
}

export const logs: Collector<LogsData> = {
  id: 'logs',
  title: 'Logs',
  collect(ctx, options) {
    const counts: Record<LogLevel, number> = { debug: 0, info: 0, warn: 0, error: 0 };
    const lines = ctx.logs.map((line) => {
      counts[line.level]++;
      return line.context === undefined ? line : { ...line, context: redactValue(plain(line.context), options.redactKeys) };
    });
    return { lines, counts, capped: ctx.logs.length >= MAX_LOG_LINES };
  },
  badge: (data) => data.lines.length || undefined,
};
