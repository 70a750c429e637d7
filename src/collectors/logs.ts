import type { LogLine, LogLevel } from '../recording/context.js';
import { MAX_LOG_LINES } from '../recording/logger.js';
import type { CorePanel } from './collector.js';
import { plain } from './plain.js';
import { redactValue } from './redact.js';

export interface LogsData {
  lines: LogLine[];
  counts: Record<LogLevel, number>;
  /** True when the request logged more than MAX_LOG_LINES lines and the rest were dropped. */
  capped: boolean;
}

/** A request's log lines, counted by level, their context made plain and redacted: the panel and the debug page. */
export function logsData(lines: LogLine[], redactKeys: string[]): LogsData {
  const counts: Record<LogLevel, number> = { debug: 0, info: 0, warn: 0, error: 0 };
  const shown = lines.map((line) => {
    counts[line.level]++;
    return line.context === undefined ? line : { ...line, context: redactValue(plain(line.context), redactKeys) };
  });
  return { lines: shown, counts, capped: lines.length >= MAX_LOG_LINES };
}

export const logs: CorePanel<LogsData> = {
  id: 'logs',
  title: 'Logs',
  collect: (s, options) => logsData(s.logs, options.redactKeys),
  badge: (data) => data.lines.length || undefined,
};
