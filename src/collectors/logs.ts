import type { LogLine, LogLevel } from '../recording/context.js';
import { MAX_LOG_LINES } from '../recording/logger.js';
import type { CorePanel } from './collector.js';
import { plain } from './plain.js';
import { redactText, redactValue } from './redact.js';

export interface LogsData {
  lines: LogLine[];
  counts: Record<LogLevel, number>;
  /** True when the request logged more than MAX_LOG_LINES lines and the rest were dropped. */
  capped: boolean;
}

/**
 * A request's log lines, counted by level, their messages and contexts redacted (a message may
 * quote a body: console.log(req.body) does): the panel and the debug page. Contexts were made
 * plain when the request was captured, or are made plain here for the debug page.
 */
export function logsData(lines: LogLine[], redactKeys: string[]): LogsData {
  const counts: Record<LogLevel, number> = { debug: 0, info: 0, warn: 0, error: 0 };
  const shown = lines.map((line) => {
    counts[line.level]++;
    const message = redactText(line.message, redactKeys);
    return line.context === undefined ? { ...line, message } : { ...line, message, context: redactValue(plain(line.context), redactKeys) };
  });
  return { lines: shown, counts, capped: lines.length >= MAX_LOG_LINES };
}

export const logs: CorePanel<LogsData> = {
  id: 'logs',
  title: 'Logs',
  collect: (s, options) => logsData(s.logs, options.redactKeys),
  badge: (data) => data.lines.length || undefined,
};
