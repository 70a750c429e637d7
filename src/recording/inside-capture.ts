import { plain } from './plain.js';
import type { CallEntry, Inside, MarkEntry, QueuedJob } from './inside.js';
import type { CommandEntry, ReplyShape } from './commands.js';
import type { MailMessage } from './mails.js';
import type { RenderEntry } from './renders.js';
import type { AiCallEntry } from './ai.js';
import type { CallerFrom } from './inside.js';

export interface ErrorSummary {
  class: string;
  message: string;
  code?: string;
}

/** A statement as it crosses to the writer: plain data, parameters copied within a budget, not yet redacted. */
export interface CapturedQuery {
  driver: string;
  sql: string;
  params: unknown;
  start: number;
  end: number;
  rows?: number;
  error?: ErrorSummary;
  caller?: string;
  /** See QueryEntry.via. */
  via?: string[];
  callerFrom?: CallerFrom;
  wait?: number;
  /** Its driver kept what EXPLAIN needs (the connection it ran on). */
  explainable?: true;
}

export interface CapturedCall extends Omit<CallEntry, 'error' | 'caller'> {
  error?: ErrorSummary;
  caller?: string;
}

/** A cache command as it crosses to the writer: arguments as short strings, not yet sanitised. */
export interface CapturedCommand {
  client: string;
  command: string;
  args: string[];
  start: number;
  end: number;
  reply?: ReplyShape;
  error?: ErrorSummary;
  caller?: string;
  commands?: CapturedCommand[];
  size?: number;
}

/** A render as it crosses to the writer: its error summarised. */
export interface CapturedRender extends Omit<RenderEntry, 'error'> {
  error?: ErrorSummary;
}

export interface CapturedMail {
  transport: string;
  message: MailMessage;
  start: number;
  end: number;
  /** The transport's answer, without the message it may hold (that is built again from what is stored, redacted). */
  info?: unknown;
  error?: ErrorSummary;
}

/** What ran inside a request, as plain data. */
export interface CapturedInside {
  queries: CapturedQuery[];
  queryCount: number;
  queryTime: number;
  calls: CapturedCall[];
  callCount: number;
  marks: MarkEntry[];
  commands?: CapturedCommand[];
  commandCount?: number;
  renders?: CapturedRender[];
  mails?: CapturedMail[];
  queued?: CapturedQueued[];
  ai?: CapturedAiCall[];
}

/** A model call as it crosses to the writer: the wire's texts as they were, read there (see redaction/ai.ts). */
export interface CapturedAiCall extends Omit<AiCallEntry, 'error' | 'caller' | 'firstChunk' | 'content'> {
  firstChunk?: number;
  caller?: string;
  error?: ErrorSummary;
  /** Keep its prompt and answer. */
  content?: true;
}

export interface CapturedQueued extends Omit<QueuedJob, 'error' | 'caller'> {
  caller?: string;
  error?: ErrorSummary;
}

const MAX_SQL = 16 * 1024;
const PARAMS_BUDGET = 4 * 1024;

export function errorSummary(err: unknown): ErrorSummary {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return { class: err.constructor?.name || err.name, message: err.message, ...(code !== undefined ? { code: String(code) } : {}) };
  }
  return { class: typeof err, message: String(err) };
}

/** Times as the request's clock had them, to the microsecond; a statement still running ends with the request. */
const at = (ms: number, end: number) => Math.round((ms < 0 ? end : ms) * 1000) / 1000;

/** Runs on the request's thread as it finishes: returns the plain copy and roughly its size in bytes. */
export function captureInside(inside: Inside, end: number): { value: CapturedInside; size: number } {
  let size = 256;
  const queries = inside.queries.map((q): CapturedQuery => {
    const sql = q.sql.length > MAX_SQL ? `${q.sql.slice(0, MAX_SQL)}…` : q.sql;
    const c: CapturedQuery = { driver: q.driver, sql, params: q.params === undefined ? undefined : plain(q.params, PARAMS_BUDGET), start: at(q.start, end), end: at(q.end, end) };
    if (q.rows !== undefined) c.rows = q.rows;
    if (q.error !== undefined) c.error = errorSummary(q.error);
    if (q.caller !== undefined) c.caller = q.caller;
    if (q.via !== undefined) c.via = q.via;
    if (q.callerFrom !== undefined) c.callerFrom = q.callerFrom;
    if (q.explain !== undefined) c.explainable = true;
    if (q.wait !== undefined) c.wait = Math.round(q.wait * 1000) / 1000;
    size += 128 + sql.length + (q.params === undefined ? 0 : 256) + (q.caller?.length ?? 0);
    return c;
  });
  const calls = inside.calls.map((call): CapturedCall => {
    size += 512 + call.url.length;
    const { error, caller, ...rest } = call;
    return {
      ...rest,
      start: at(call.start, end),
      end: at(call.end, end),
      requestHeaders: plain(call.requestHeaders, PARAMS_BUDGET),
      responseHeaders: plain(call.responseHeaders, PARAMS_BUDGET),
      ...(error !== undefined ? { error: errorSummary(error) } : {}),
      ...(caller !== undefined ? { caller } : {}),
    };
  });
  const marks = inside.marks.map((m) => ({ ...m, start: at(m.start, end), end: at(m.end, end) }));
  size += marks.length * 96;
  const value: CapturedInside = { queries, queryCount: inside.queryCount, queryTime: at(inside.queryTime, end), calls, callCount: inside.callCount, marks };
  if (inside.commandCount > 0) {
    value.commands = inside.commands.map((c) => commandOf(c, end));
    value.commandCount = inside.commandCount;
    size += inside.commands.length * 256;
  }
  if (inside.renders.length > 0) {
    value.renders = inside.renders.map((r) => {
      size += 256 + r.file.length + (r.values === undefined ? 0 : 8 * 1024);
      const { error, start, end: ended, ...rest } = r;
      return { ...rest, start: at(start, end), end: at(ended, end), ...(error !== undefined ? { error: errorSummary(error) } : {}) };
    });
  }
  if (inside.mails.length > 0) value.mails = inside.mails.map((m) => {
    const mail = capturedMail(m, end);
    size += 1024 + (m.message.text?.toString().length ?? 0) + (m.message.html?.toString().length ?? 0);
    for (const a of m.message.attachments) size += 64 + ((a.content as { length?: number } | undefined)?.length ?? 0);
    return mail;
  });
  if (inside.queued.length > 0) {
    value.queued = inside.queued.map(({ error, caller, start, end: ended, ...rest }) => {
      size += 256 + rest.ids.length * 16;
      return { ...rest, start: at(start, end), end: at(ended, end), ...(caller !== undefined ? { caller } : {}), ...(error !== undefined ? { error: errorSummary(error) } : {}) };
    });
  }
  if (inside.ai.length > 0) {
    value.ai = inside.ai.map(({ error, caller, firstChunk, content, start, end: ended, wire, ...rest }) => {
      size += 512 + (wire ? (wire.body?.length ?? 0) + wire.answer.length + (wire.tail?.length ?? 0) : 2048);
      return {
        ...rest,
        start: at(start, end),
        end: at(ended, end),
        // The answer may still be arriving: what has come so far.
        ...(wire !== undefined ? { wire: { ...wire } } : {}),
        ...(firstChunk !== undefined ? { firstChunk: at(firstChunk, end) } : {}),
        ...(caller !== undefined ? { caller } : {}),
        ...(error !== undefined ? { error: errorSummary(error) } : {}),
        ...(content ? { content: true as const } : {}),
      };
    });
  }
  return { value, size };
}

const MAX_ARGS = 32;
const MAX_ARG = 200;

/** An argument as a short string: bytes by their length (what they hold is the app's data, and not text). */
function argOf(arg: unknown): string {
  if (arg instanceof Uint8Array) return `<${arg.byteLength} bytes>`;
  const text = typeof arg === 'string' ? arg : String(arg);
  return text.length > MAX_ARG ? `${text.slice(0, MAX_ARG)}…` : text;
}

function commandOf(c: CommandEntry, end: number): CapturedCommand {
  const args = c.args.slice(0, MAX_ARGS).map(argOf);
  if (c.args.length > MAX_ARGS) args.push(`… ${c.args.length - MAX_ARGS} more`);
  const out: CapturedCommand = { client: c.client, command: c.command, args, start: at(c.start, end), end: at(c.end, end) };
  if (c.reply !== undefined) out.reply = c.reply;
  if (c.error !== undefined) out.error = errorSummary(c.error);
  if (c.caller !== undefined) out.caller = c.caller;
  if (c.commands !== undefined) out.commands = c.commands.map((inner) => commandOf(inner, end));
  if (c.size !== undefined) out.size = c.size;
  return out;
}

function capturedMail(m: import('./mails.js').MailEntry, end: number): CapturedMail {
  const out: CapturedMail = { transport: m.transport, message: m.message, start: at(m.start, end), end: at(m.end, end) };
  if (m.error !== undefined) out.error = errorSummary(m.error);
  if (m.info !== null && typeof m.info === 'object') {
    const { message: _built, ...rest } = m.info as { message?: unknown };
    out.info = plain(rest, PARAMS_BUDGET);
  }
  return out;
}
