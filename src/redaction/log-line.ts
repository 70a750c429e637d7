import type { LogLine } from '../recording/context.js';
import { plain } from '../recording/plain.js';
import { redactText, redactValue } from './redact.js';

/**
 * A log line as it may be stored: a line its logger wrote as JSON (pino's) read into message and
 * context, the message and context redacted (a message may quote a body: console.log(req.body)
 * does). A line already read and redacted comes back the same.
 */
export function redactedLine(given: LogLine, keys: string[]): LogLine {
  const line = given.raw === undefined ? given : readRaw(given);
  const message = redactText(line.message, keys);
  return line.context === undefined ? { ...line, message } : { ...line, message, context: redactValue(plain(line.context), keys) };
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
