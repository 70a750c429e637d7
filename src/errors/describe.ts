import path from 'node:path';
import { inspect } from 'node:util';
import { parse } from 'stacktrace-parser';
import { excerptOf, isExcerptable, mapToSource, toPath, type Excerpt } from './sources.js';
import { failedTemplates } from './template.js';
import { mapHead } from './collections.js';

export type { Excerpt } from './sources.js';

export interface FrameInfo {
  fn: string;
  file: string;
  line: number;
  column: number;
  /** app frames are expanded with code; vendor (node_modules) and internal (node:) frames are collapsed. */
  kind: 'app' | 'vendor' | 'internal';
  /** A frame of the profiler's own code (a library frame like any other, said so on the pages). */
  profiler?: true;
  excerpt?: Excerpt;
  /** Set while the frame waits for its excerpt to be read (by the writer thread): a module the process loaded. */
  source?: true;
}

export interface ErrorInfo {
  class: string;
  message: string;
  /** The error's own HTTP status (its `status` or `statusCode` field), when it has one. */
  status?: number;
  code?: string;
  /**
   * The error's own fields that say why, as libraries set them: body-parser's `type`, `limit` and
   * `length`, jose's `claim` and `reason`, jsonwebtoken's `expiredAt`, a validator's `issues`.
   */
  details?: Record<string, unknown>;
  stack: string;
  frames: FrameInfo[];
}

/** The thrown error first, then its causes (err.cause) and aggregated errors, as plain JSON. */
export interface ExceptionData {
  /** The status the response went out with (what an error handler made of the error). */
  status: number;
  /** The thrown error's own status field, where it differs from the status sent. */
  errorStatus?: number;
  chain: ErrorInfo[];
}

const MAX_CHAIN = 10;
/** Code is shown for this many app frames of each error: they answer "where in my code". */
const MAX_EXCERPTS = 10;
const MAX_TEXT = 64 * 1024;

export const statusOf = (err: unknown): number => ownStatus(err) ?? 500;

/** The error status an error carries itself (`status` or `statusCode`, as http-errors sets both), if any. */
export function ownStatus(err: unknown): number | undefined {
  const e = err as { status?: unknown; statusCode?: unknown } | null;
  let status = NaN;
  try {
    status = Number(e?.status ?? e?.statusCode);
  } catch {
    // A status that cannot be read or turned into a number is no status.
  }
  return Number.isInteger(status) && status >= 400 && status <= 599 ? status : undefined;
}

/**
 * The exception as the response had it: the status sent (an app's own handler may answer 404 for
 * an error that has no status field, or 500 for one that says 400), and the error's own where
 * it differs.
 */
export function withSentStatus(data: ExceptionData, sent: number | undefined): ExceptionData {
  if (sent === undefined || sent < 100 || sent === data.status) return data;
  const own = data.chain[0]?.status;
  return own === undefined || own === sent ? { ...data, status: sent } : { ...data, status: sent, errorStatus: own };
}

/**
 * The error and its causes as plain data. Frames are read from the part of the stack after the
 * message, so text the message carries can never pose as a frame. With `excerpts`, code is read
 * at once (within a small budget, see sources.ts); without, eligible frames are marked `source`
 * for the writer thread to read.
 */
export function describeException(err: unknown, options: { excerpts: boolean }): ExceptionData {
  const chain: ErrorInfo[] = [];
  const seen = new Set<unknown>();
  const budget = { reads: 4 };
  const visit = (e: unknown) => {
    if (e === undefined || seen.has(e) || chain.length >= MAX_CHAIN) return;
    seen.add(e);
    chain.push(describeError(e, options.excerpts ? budget : undefined));
    if (e instanceof AggregateError && Array.isArray(e.errors)) for (const inner of e.errors) visit(inner);
    if (e && typeof e === 'object' && 'cause' in e) visit(read(() => (e as { cause: unknown }).cause, undefined));
  };
  visit(err);
  return { status: statusOf(err), chain };
}

function describeError(err: unknown, budget: { reads: number } | undefined): ErrorInfo {
  if (!(err instanceof Error)) {
    const type = err === null ? 'null' : typeof err === 'object' ? (read(() => err.constructor?.name, undefined) ?? 'Object') : typeof err;
    const message = typeof err === 'string' ? err : inspect(err, { depth: 2, breakLength: 120 });
    return { class: type, message: cut(message), status: ownStatus(err), stack: '', frames: [] };
  }
  const stack = read(() => (typeof err.stack === 'string' ? err.stack : ''), '');
  const message = read(() => String(err.message ?? ''), '');
  const code = read(() => (err as { code?: unknown }).code, undefined);
  return {
    class: read(() => err.constructor?.name || err.name || 'Error', 'Error'),
    message: cut(message),
    status: ownStatus(err),
    code: typeof code === 'string' || typeof code === 'number' ? String(code) : undefined,
    details: detailsOf(err),
    stack: cut(stack),
    frames: withTemplate(err, framesOf(afterMessage(stack, message), budget), budget),
  };
}

/** Fields every error has, or that the chain shows already. */
const NOT_DETAILS = new Set(['message', 'stack', 'name', 'status', 'statusCode', 'code', 'cause', 'errors', 'expose', 'headers']);
const MAX_DETAILS = 20;
const MAX_DETAIL_NODES = 200;

/**
 * The error's own enumerable fields, copied through their data descriptors only (no getter of the
 * error's runs, a Proxy's traps aside), within a bound: primitives, dates, and plain arrays and
 * objects of them. Undefined when it has none.
 */
function detailsOf(err: Error): Record<string, unknown> | undefined {
  let nodes = 0;
  const copy = (value: unknown, depth: number): unknown => {
    if (++nodes > MAX_DETAIL_NODES) return undefined;
    if (typeof value === 'string') return value.length > 300 ? `${value.slice(0, 300)}…` : value;
    if (typeof value === 'number' || typeof value === 'boolean' || value === null) return value;
    if (typeof value === 'bigint') return `${value}n`;
    if (value instanceof Date) return Number.isNaN(value.getTime()) ? String(value) : value.toISOString();
    if (typeof value !== 'object' || depth > 5) return undefined;
    if (ArrayBuffer.isView(value)) return `[${value.byteLength} bytes]`;
    const array = Array.isArray(value);
    // Plain data only: an instance (a request, a socket, a response an HTTP client hung on its error) is named, not walked.
    const proto = read(() => Object.getPrototypeOf(value) as object | null, null);
    // A Map's entries (celebrate keeps a validation error per part of the request in a Map of its
    // own): its first 30, by Map's own iterator, so a cache of a million entries costs 30 steps.
    if (read(() => value instanceof Map, false)) {
      const out: Record<string, unknown> = Object.create(null);
      read(() => {
        const { entries, size } = mapHead(value as Map<unknown, unknown>, 30);
        for (const [key, inner] of entries) out[String(key)] = copy(inner, depth + 1);
        if (size > entries.length) out['…'] = `${size - entries.length} more`;
      }, undefined);
      return out;
    }
    // An error inside (a joi ValidationError in celebrate's): its message and own fields, as its own are.
    const isError = !array && read(() => value instanceof Error, false);
    if (!array && !isError && proto !== null && proto !== Object.prototype) {
      const made = dataOf(proto, 'constructor')?.value;
      return `[${typeof made === 'function' && made.name ? made.name : 'object'}]`;
    }
    // No prototype: a `__proto__` key is a key like any other.
    const out: Record<string, unknown> = array ? ([] as unknown as Record<string, unknown>) : Object.create(null);
    const keys = array ? Array.from({ length: Math.min(read(() => (value as unknown[]).length, 0), 30) }, (_, i) => String(i)) : ownKeys(value).slice(0, 30);
    if (isError) keys.unshift('message');
    for (const key of keys) {
      const inner = dataOf(value, key);
      const kept = inner === undefined ? undefined : copy(inner.value, depth + 1);
      if (kept !== undefined) out[key] = kept;
    }
    return out;
  };
  let details: Record<string, unknown> | undefined;
  let count = 0;
  for (const key of ownKeys(err)) {
    if (NOT_DETAILS.has(key)) continue;
    const own = dataOf(err, key);
    const kept = own === undefined ? undefined : copy(own.value, 0);
    if (kept === undefined) continue;
    (details ??= Object.create(null) as Record<string, unknown>)[key] = kept;
    if (++count >= MAX_DETAILS) break;
  }
  return details;
}

const ownKeys = (value: object): string[] => read(() => Object.keys(value), [] as string[]);
const dataOf = (value: object, key: string): { value: unknown } | undefined => {
  const descriptor = read(() => Object.getOwnPropertyDescriptor(value, key), undefined);
  return descriptor !== undefined && 'value' in descriptor ? { value: descriptor.value } : undefined;
};

/** A render error's template first, as the app's code it is: where to look. */
function withTemplate(err: Error, frames: FrameInfo[], budget: { reads: number } | undefined): FrameInfo[] {
  const template = failedTemplates.get(err);
  if (template === undefined) return frames;
  const frame: FrameInfo = { fn: `template ${template.name}`, file: template.file, line: template.line ?? 0, column: 0, kind: 'app' };
  if (template.line !== undefined) {
    if (budget) frame.excerpt = excerptOf(frame.file, frame.line, budget);
    else frame.source = true;
  }
  return [frame, ...frames];
}

/**
 * The frames part of a stack. V8 writes "<class>: <message>" before the frames, and the message is
 * whatever the app put there (user input included, newlines and all): everything up to the end of
 * the message is skipped. Where the message is not in the stack (changed after the stack was
 * made), the first line is.
 */
function afterMessage(stack: string, message: string): string {
  const at = message === '' ? -1 : stack.indexOf(message);
  if (at >= 0) return stack.slice(at + message.length);
  const newline = stack.indexOf('\n');
  return newline < 0 ? '' : stack.slice(newline);
}

function framesOf(stack: string, budget: { reads: number } | undefined): FrameInfo[] {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(stack);
  } catch {
    return [];
  }
  let expanded = 0;
  return parsed.filter((f) => f.file).slice(0, 100).map((f) => {
    const raw = f.file!;
    const frame = mapToSource({
      fn: f.methodName && f.methodName !== '<unknown>' ? f.methodName : '(anonymous)',
      file: toPath(raw),
      line: f.lineNumber ?? 0,
      column: f.column ?? 0,
      kind: kindOf(raw),
    }, raw);
    if (isOwnCode(toPath(raw))) frame.profiler = true;
    // A frame mapToSource moved to its source was checked there, as a source of a loaded map.
    if (frame.kind === 'app' && expanded < MAX_EXCERPTS && isExcerptable(frame.file, raw, frame.file !== toPath(raw))) {
      expanded++;
      if (budget) frame.excerpt = excerptOf(frame.file, frame.line, budget);
      else frame.source = true;
    }
    return frame;
  });
}

/** Code for the frames capture() marked, read where it does not cost a request: the writer thread. */
export function addExcerpts(data: ExceptionData): void {
  const budget = { reads: 4 };
  for (const error of data.chain) {
    for (const frame of error.frames) {
      if (!frame.source) continue;
      delete frame.source;
      frame.excerpt = excerptOf(frame.file, frame.line, budget);
    }
  }
}

/** The profiler's own code is a library to its users, wherever it is installed from. */
const OWN_CODE = ['src', 'dist'].map((dir) => path.resolve(__dirname, '../..', dir) + path.sep);
const isOwnCode = (file: string) => OWN_CODE.some((dir) => file.startsWith(dir)) && !/[\\/]demo[\\/]/.test(file);

const kindOf = (file: string): FrameInfo['kind'] => {
  if (file.startsWith('node:') || file.startsWith('internal/') || !/[\\/]/.test(file)) return 'internal';
  if (/[\\/]node_modules[\\/]/.test(file) || isOwnCode(toPath(file))) return 'vendor';
  return 'app';
};

const cut = (text: string) => (text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}…` : text);

/** An error's own getters may throw: what cannot be read is left out, never thrown at the app. */
function read<T>(fn: () => T, fallback: T): T {
  try {
    return fn();
  } catch {
    return fallback;
  }
}
