import type { Request } from 'express';
import type { ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { Collector } from './collect.js';
import { collectEach } from './collect.js';
import { bounded, plain } from './plain.js';
import { describeException, type ExceptionData } from '../errors/describe.js';
import type { ResolvedOptions } from '../options.js';
import type { LogLine, RequestContext, WorkContext } from './context.js';
import type { CommandState } from './command.js';
import { traceOfHeader } from './trace.js';
import type { LoopState } from './loop.js';
import { noteCheck, type Check } from './checks.js';
import { corsOptionsCheck } from './cors-options.js';
import { settledChecks, unseenRefusal } from './validations.js';
import type { Dump } from './dump.js';
import type { Translation } from './translations.js';
import { describeTrail } from './layers.js';
import { captureInside, type CapturedInside } from './inside-capture.js';
import { sourceMapped, type CpuState } from './cpu.js';
import { whoOf, type CapturedWho } from './who.js';
import { captureSession, type CapturedSession } from './session.js';

/**
 * A finished request as the request's thread leaves it, and as it crosses to the writer thread:
 * flat, with as few objects as can be, because copying it for the thread costs the request's
 * thread per object and per key. snapshotOf() makes the Snapshot from it, in the writer.
 */
export interface Captured {
  token: string;
  parent: string | null;
  /** Epoch milliseconds at arrival. */
  time: number;
  /** Milliseconds from arrival to the response's end, and to its first byte. */
  duration: number;
  ttfb: number;
  rss: number;
  aborted: boolean;
  ip: string;
  /** Roughly what this capture holds, in bytes: the writer's backlog is bounded by it. */
  size: number;
  origin: string;
  method: string;
  url: string;
  httpVersion: string;
  /** The request's headers as the client sent them (req.rawHeaders): names and values in turn. */
  rawHeaders: string[];
  query?: unknown;
  body?: unknown;
  bodyCut?: boolean;
  /** Why the body did not parse (a body parser's message): its bytes are rawBody then. */
  bodyUnparsed?: string;
  rawBody?: WireBody;
  secure: boolean;
  remoteAddress?: string;
  status: number;
  statusMessage: string;
  /** The response head as it went out (status line and headers), or the headers set when none went out. */
  head: string | Record<string, unknown>;
  responseBody: WireBody;
  route?: string;
  answeredAt?: string[];
  answeredBy?: string;
  params?: unknown;
  /** (kind TAB name, entered at) pairs: see layers.ts. */
  trail: unknown[];
  logs?: LogLine[];
  logsDropped?: number;
  exception?: ExceptionData;
  inside?: CapturedInside;
  cpu?: CpuState;
  extra?: Record<string, unknown>;
  extraErrors?: Record<string, string>;
  /** A command's own: see command.ts. The request's fields then hold what a command has of them. */
  command?: CommandState;
  /** The OpenTelemetry trace it ran under. */
  trace?: { traceId: string; spanId: string };
  loop?: LoopState;
  checks?: Check[];
  dumps?: Dump[];
  dumpsDropped?: number;
  translations?: CapturedTranslations;
  who?: CapturedWho;
  session?: CapturedSession;
}

/** A request's translations as they cross to the writer: see translations.ts. */
export interface CapturedTranslations {
  messages: Translation[];
  language?: string;
  known?: string[];
  fallback?: string[];
  dropped?: number;
}

/**
 * Read a request the moment it finishes (route, params and the peer's address are gone soon
 * after: the router restores them as it unwinds, the socket forgets once the client hangs up).
 * Runs on the request's thread once per request: it copies references, cuts bodies and takes the
 * response head as Node wrote it, and leaves all parsing to the writer.
 */
/** RFC 9112: a request has a body when it says how long it is, or that it comes in chunks. */
const isEmptyObject = (value: unknown) => value !== null && typeof value === 'object' && !ArrayBuffer.isView(value) && Object.keys(value).length === 0;
const carriesBody = (req: Request) => req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');

export function capture(ctx: RequestContext, own: Collector[], options: ResolvedOptions, tell: (message: string) => void): Captured {
  const req = ctx.req as Request;
  const res = ctx.res as ServerResponse & { _header?: unknown };
  const limit = options.bodyLimit;
  const url = req.originalUrl ?? req.url ?? '/';
  // Express 4's body parsers set req.body = {} on every request they see: a request that carried no body has none.
  const body = isEmptyObject(req.body) && !carriesBody(req) ? undefined : (req.body as unknown);
  const remoteAddress = req.socket?.remoteAddress;
  const head = typeof res._header === 'string' ? res._header : res.getHeaders();
  // Before the trail is described: the cors() layers it passed are still there to read.
  if (req.headers.origin !== undefined) {
    const cors = corsOptionsCheck(ctx.trail);
    if (cors !== undefined) noteCheck(ctx, cors);
  }
  // Every field written out in one literal, as timesOf() has them: spread from it, the capture took
  // about 80 µs more a request under load (a slower object to copy to the writer), measured.
  const c: Captured = {
    size: 0,
    token: ctx.token,
    parent: ctx.parent,
    time: ctx.time,
    duration: ctx.end,
    ttfb: ctx.ttfb,
    rss: rss(ctx.start + ctx.end),
    // Not all sent, and either never ended by the app or cut off (a request finished early by flush() is neither).
    aborted: !res.writableFinished && (res.destroyed || !res.writableEnded),
    ip: ipOf(req, remoteAddress),
    origin: ctx.origin,
    method: req.method ?? 'GET',
    url,
    httpVersion: req.httpVersion,
    rawHeaders: req.rawHeaders,
    query: url.includes('?') ? plain(queryOf(req), QUERY_BUDGET) : undefined,
    body: undefined,
    bodyCut: undefined,
    rawBody: undefined,
    secure: Boolean((req.socket as TLSSocket | undefined)?.encrypted),
    remoteAddress,
    status: res.statusCode,
    statusMessage: res.statusMessage,
    head,
    responseBody: bodyOf(ctx.bodyChunks, ctx.bodySize, limit),
    route: ctx.route,
    answeredAt: ctx.answeredAt,
    answeredBy: ctx.answeredBy,
    params: ctx.params === undefined ? undefined : plain(ctx.params, QUERY_BUDGET),
    trail: describeTrail(ctx.trail),
    logs: undefined,
    logsDropped: ctx.logsDropped || undefined,
    exception: exceptionOf(ctx),
    inside: undefined,
    cpu: undefined,
    extra: undefined,
    extraErrors: undefined,
  };
  let parsedBytes = 0;
  let size = 1024 + url.length + c.responseBody.text.length + (typeof head === 'string' ? head.length : 0);
  for (const h of c.rawHeaders) size += h.length;
  const unparsed = parseFailure(ctx.error);
  if (unparsed !== undefined) {
    // body-parser sets req.body to {} before it throws: what it was sent is on its error.
    c.rawBody = wire(unparsed.body, Buffer.byteLength(unparsed.body), limit);
    c.bodyUnparsed = unparsed.message;
  } else if (typeof body === 'string') c.rawBody = wire(body, Buffer.byteLength(body), limit);
  else if (ArrayBuffer.isView(body)) c.rawBody = wire(body, body.byteLength, limit);
  else if (body !== undefined && (parsedBytes = smallParsed(req, limit)) > 0) {
    // What a parser made of a body no larger than the limit is about as large (a few times its bytes in memory): it crosses as it is.
    c.body = body;
    size += 3 * parsedBytes;
  } else if (body !== undefined) {
    // Any other is cut here, to about bodyLimit: a huge one must not cross to the writer whole.
    const copy = bounded(body, limit);
    c.body = copy.value;
    if (copy.cut) c.bodyCut = true;
    size += copy.size;
  }
  size += c.rawBody?.text.length ?? 0;
  size = captureWork(ctx, c, size);
  // A client that traces names its trace even where the app does not trace itself.
  if (c.trace === undefined && req.headers.traceparent !== undefined) c.trace = traceOfHeader(req.headers.traceparent);
  if (own.length > 0) {
    c.extra = {};
    const failed = collectEach(own, (collector) => collector.collect(ctx, options), c.extra, tell);
    if (failed) c.extraErrors = failed;
  }
  // Read off the app's objects: what cannot be read costs itself, never the profile.
  try {
    const who = whoOf(req, options.identify, tell);
    if (who !== undefined) {
      c.who = who;
      size += 256 + JSON.stringify(who).length;
    }
  } catch {
    tell('who made a request could not be read off it');
  }
  try {
    const session = captureSession(ctx, req, res, limit);
    if (session !== undefined) {
      c.session = session.session;
      size += session.size;
    }
  } catch {
    tell("a request's session could not be read");
  }
  // A refusal the app answered itself, in an app whose zod cannot be followed: say how to follow it.
  const unseen = unseenRefusal(c.status, c.checks);
  if (unseen !== undefined) (c.checks ??= []).push(unseen);
  c.size = size;
  return c;
}

/** Which unit of work it was and when: a request's and a command's alike. */
const timesOf = (ctx: WorkContext) => ({ size: 0, token: ctx.token, parent: ctx.parent, time: ctx.time, duration: ctx.end, ttfb: ctx.ttfb, rss: rss(ctx.start + ctx.end) });

/** What a request and a command both carry: the log, what ran inside, the CPU profile, the exception. Returns the size with theirs. */
function captureWork(ctx: WorkContext, c: Captured, size: number): number {
  if (ctx.logs.length > 0) {
    // Log contexts are the app's live objects: a small flat one crosses as it is, any other is copied now, within a budget.
    c.logs = ctx.logs.map((line) => {
      size += 64 + line.message.length + (line.raw?.length ?? 0);
      if (line.context === undefined) return line;
      const flat = flatSize(line.context);
      if (flat >= 0) {
        size += flat;
        return line;
      }
      const context = bounded(line.context, LOG_CONTEXT_BUDGET);
      size += context.size;
      return { ...line, context: context.value };
    });
  }
  if (ctx.inside !== undefined) {
    const inside = captureInside(ctx.inside, ctx.end);
    c.inside = inside.value;
    size += inside.size;
  }
  if (ctx.cpu !== undefined) {
    const profile = ctx.cpu.profile === undefined ? undefined : sourceMapped(ctx.cpu.profile);
    c.cpu = { ...ctx.cpu, profile };
    size += 1024 + ((profile as { nodes?: unknown[] } | undefined)?.nodes?.length ?? 0) * 200;
  }
  if (c.exception) for (const e of c.exception.chain) size += 256 + e.message.length + e.stack.length + e.frames.length * 128;
  if (ctx.trace !== undefined) c.trace = ctx.trace;
  if (ctx.checks !== undefined) {
    c.checks = settledChecks(ctx.checks);
    size += 512 * ctx.checks.length;
  }
  if (ctx.dumps !== undefined) {
    c.dumps = ctx.dumps.kept;
    if (ctx.dumps.dropped > 0) c.dumpsDropped = ctx.dumps.dropped;
    size += ctx.dumps.chars + 256 * ctx.dumps.kept.length;
  }
  const translations = ctx.translations;
  if (translations !== undefined) {
    c.translations = { messages: [...translations.byKey.values()], language: translations.language, known: translations.known, fallback: translations.fallback, dropped: translations.dropped || undefined };
    size += 512 * translations.byKey.size;
  }
  // Most requests held nothing up and waited for nothing: their empty state is not stored.
  const loop = ctx.loop;
  if (loop !== undefined && (loop.heap !== undefined || loop.blocks !== undefined || loop.waits !== undefined)) c.loop = loop;
  return size;
}

/** A finished command as it crosses to the writer: a request's shape, with its name where the URL goes and its exit code for a status. */
export function captureCommand(ctx: WorkContext): Captured {
  const command = ctx.command!;
  const c: Captured = {
    ...timesOf(ctx),
    aborted: false,
    ip: '',
    origin: '',
    method: command.kind.toUpperCase(),
    url: command.name,
    httpVersion: '1.1',
    rawHeaders: [],
    secure: false,
    status: command.exitCode ?? 0,
    statusMessage: '',
    head: {},
    responseBody: { text: '', bytes: false, size: 0 },
    trail: [],
    exception: exceptionOf(ctx),
    command: { ...command, argv: command.argv && [...command.argv], job: command.job && { ...command.job } },
  };
  c.size = captureWork(ctx, c, 1024 + command.name.length);
  return c;
}

/** A body parser's failure to parse (body-parser's `entity.parse.failed`), with the text it was sent. */
function parseFailure(error: unknown): { body: string; message: string } | undefined {
  if (error === null || typeof error !== 'object') return undefined;
  const e = error as { type?: unknown; body?: unknown; message?: unknown };
  try {
    return e.type === 'entity.parse.failed' && typeof e.body === 'string' ? { body: e.body, message: String(e.message) } : undefined;
  } catch {
    return undefined;
  }
}

/** The length of a body read in whole from a request that said it was at most `limit` bytes long, else 0. */
const smallParsed = (req: Request, limit: number): number => {
  const declared = Number(req.headers['content-length']);
  return declared > 0 && declared <= limit && req.complete ? declared : 0;
};

/**
 * The size of a context that is a small object of short plain values ({ total: 42 }), which
 * crosses as it is, or -1 for any other, which is copied within a budget first.
 */
function flatSize(context: unknown): number {
  if (context === null || typeof context !== 'object' || Object.getPrototypeOf(context) !== Object.prototype) return -1;
  let size = 2;
  let keys = 0;
  try {
    for (const key in context) {
      const value = (context as Record<string, unknown>)[key];
      if (++keys > 32 || (value !== null && typeof value === 'object') || typeof value === 'function' || typeof value === 'symbol') return -1;
      if (typeof value === 'string' && value.length > 1000) return -1;
      size += key.length + (typeof value === 'string' ? value.length : 8) + 4;
    }
  } catch {
    // A getter that throws: the budgeted copy says so in its place.
    return -1;
  }
  return size;
}

const QUERY_BUDGET = 16 * 1024;
const LOG_CONTEXT_BUDGET = 16 * 1024;

function exceptionOf(ctx: WorkContext): ExceptionData | undefined {
  if (ctx.error === undefined) return undefined;
  if (ctx.described?.error === ctx.error) return ctx.described.data;
  return describeException(ctx.error, { excerpts: false });
}

/**
 * The same capture with what the app may have put there made plain (a parsed body it added to,
 * its own panels): for the rare one that holds something a thread cannot be sent, such as a
 * function or a socket. Everything else was copied plain already.
 */
export function sendable(c: Captured): Captured {
  return { ...c, body: plain(c.body), extra: c.extra && (plain(c.extra) as Record<string, unknown>) };
}

/**
 * A body as it crosses to the writer: the first limit + 1 characters or bytes (enough to show, and
 * to tell it was cut), bytes as a latin1 string of one character each, which costs far less to
 * send than a typed array (and never drags along the 8 KiB slab a small Buffer is a view on).
 */
export interface WireBody {
  text: string;
  bytes: boolean;
  size: number;
}

function wire(value: string | ArrayBufferView, size: number, limit: number): WireBody {
  if (typeof value === 'string') return { text: value.slice(0, limit + 1), bytes: false, size };
  // Any view (Uint8Array from fetch, a DataView...) is bytes: read through a Buffer over the same memory.
  const bytes = Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  return { text: bytes.toString('latin1', 0, limit + 1), bytes: true, size };
}

/** The kept response chunks as one value: a lone chunk as it is, several as one run of bytes. */
function bodyOf(chunks: (Buffer | string)[], size: number, limit: number): WireBody {
  if (chunks.length <= 1) return wire(chunks[0] ?? '', size, limit);
  return wire(Buffer.concat(chunks.map((c) => (typeof c === 'string' ? Buffer.from(c) : c))), size, limit);
}

let rssValue = 0;
let rssAt = -Infinity;

/** Reading RSS is a read of /proc: once per 50 ms is exact enough for a panel, and cheap. */
function rss(now: number): number {
  if (now - rssAt > 50) {
    rssValue = process.memoryUsage.rss();
    rssAt = now;
  }
  return rssValue;
}

/** Without X-Forwarded-For, req.ip (and its trust-proxy walk) can only be the peer's address. */
function ipOf(req: Request, remoteAddress: string | undefined): string {
  const ip = req.headers['x-forwarded-for'] === undefined ? remoteAddress : safe(() => req.ip, remoteAddress);
  return ip ?? 'unknown';
}

/** Express 5 parses req.query anew on each read, so a URL without a query skips it. */
function queryOf(req: Request): unknown {
  try {
    return req.query;
  } catch (err) {
    return { '[unparsable query]': String(err) };
  }
}

function safe<T>(fn: () => T, fallback: T): T {
  try {
    return fn();
  } catch {
    return fallback;
  }
}
