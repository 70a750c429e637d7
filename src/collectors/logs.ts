import type { LogChannel, LogLine, LogLevel } from '../recording/context.js';
import { MAX_LOG_LINES } from '../recording/logger.js';
import type { CorePanel } from './collector.js';
import { redactedLine } from '../redaction/log-line.js';

export interface LogsData {
  lines: LogLine[];
  counts: Record<LogLevel, number>;
  /** Lines by where they came from: the panel filters by these. */
  channels: Partial<Record<LogChannel, number>>;
  /** True when the request logged more than MAX_LOG_LINES lines and the rest were dropped. */
  capped: boolean;
  /** How many were dropped. */
  dropped: number;
}

/**
 * A request's log lines, counted by level and channel, their messages and contexts redacted (a
 * message may quote a body: console.log(req.body) does): the panel and the debug page. Contexts
 * were made plain when the request was captured, or are made plain here for the debug page; lines
 * a logger wrote as JSON (pino) are read here.
 */
export function logsData(lines: LogLine[], redactKeys: string[], dropped = 0): LogsData {
  return counted(lines.map((line) => redactedLine(line, redactKeys)), dropped);
}

/** The lines with their counts: all the panel stores is the lines (and how many were dropped), the rest is counted again on reading. */
function counted(lines: LogLine[], dropped: number): LogsData {
  const counts: Record<LogLevel, number> = { debug: 0, info: 0, warn: 0, error: 0 };
  const channels: Partial<Record<LogChannel, number>> = {};
  for (const line of lines) {
    counts[line.level]++;
    channels[line.channel] = (channels[line.channel] ?? 0) + 1;
  }
  return { lines, counts, channels, capped: dropped > 0 || lines.length >= MAX_LOG_LINES, dropped };
}

export const logs: CorePanel<LogsData> = {
  id: 'logs',
  title: 'Logs',
  collect: (s) => counted(s.logs, s.logsDropped),
  unpack: (s: { lines: LogLine[]; dropped?: number }) => counted(s.lines, s.dropped ?? 0),
  badge: (data) => data.lines.length || undefined,
};
