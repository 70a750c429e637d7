import type { LogChannel, LogLine, LogLevel } from '../recording/context.js';
import { MAX_LOG_LINES } from '../recording/logger.js';
import type { CorePanel } from './collector.js';
import { plain } from './plain.js';
import { redactText, redactValue } from './redact.js';

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
  const shown = lines.map((given) => {
    const line = given.raw === undefined ? given : readRaw(given);
    const message = redactText(line.message, redactKeys);
    return line.context === undefined ? { ...line, message } : { ...line, message, context: redactValue(plain(line.context), redactKeys) };
  });
  return counted(shown, dropped);
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

/** What pino writes beside the message and bindings: the panel has these already, or has no use for them. */
const PINO_OWN = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'message', 'name', 'v']);

/** A JSON line (pino's): its message, its logger's name, and the rest (merged object and bindings) as context. */
function readRaw(line: LogLine): LogLine {
  const { raw, ...rest } = line;
  try {
    const parsed = JSON.parse(raw!) as Record<string, unknown>;
    const context: Record<string, unknown> = {};
    let fields = 0;
    for (const key of Object.keys(parsed)) {
      if (PINO_OWN.has(key)) continue;
      context[key] = parsed[key];
      fields++;
    }
    const read: LogLine = { ...rest, message: String(parsed.msg ?? parsed.message ?? '') };
    if (typeof parsed.name === 'string') read.logger = parsed.name;
    if (fields > 0) read.context = context;
    return read;
  } catch {
    return { ...rest, message: raw!.trimEnd() };
  }
}

export const logs: CorePanel<LogsData> = {
  id: 'logs',
  title: 'Logs',
  collect: (s, options) => logsData(s.logs, options.redactKeys, s.logsDropped),
  pack(d) {
    if (!Array.isArray(d.lines)) throw new TypeError('no lines');
    const stored = d as unknown as Record<string, unknown>;
    stored.counts = stored.channels = stored.capped = undefined;
    if (d.dropped === 0) stored.dropped = undefined;
    return d;
  },
  unpack: (s: { lines: LogLine[]; dropped?: number }) => counted(s.lines, s.dropped ?? 0),
  badge: (data) => data.lines.length || undefined,
};
