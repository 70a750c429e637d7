import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingMessage, ServerResponse } from 'node:http';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** Where a line came from: req.log or the exported logger, console.*, pino, winston. */
export type LogChannel = 'app' | 'console' | 'pino' | 'winston' | 'nest' | 'log4js';

export interface LogLine {
  time: number;
  level: LogLevel;
  message: string;
  context?: unknown;
  channel: LogChannel;
  /** The logger's name, when it has one (pino's `name`). */
  logger?: string;
  /** A line as its logger wrote it (pino's JSON), read into message and context off the request's thread. */
  raw?: string;
}

/** One middleware or route handler call, in milliseconds since the request started. */
export interface Span {
  name: string;
  kind: 'middleware' | 'route' | 'handler' | 'error';
  start: number;
  end: number;
}

/**
 * What any unit of work records into: a request, or a command (profiler.run, a script, a queued
 * job: see command.ts). Instruments, loggers and the CPU profiler see only this.
 */
export interface WorkContext {
  /** The recorder that made this context: a response is recorded by the profiler that saw it first. */
  recorder: RecorderSettings;
  token: string;
  parent: string | null;
  /** Epoch milliseconds at arrival. */
  time: number;
  /** performance.now() at arrival. */
  start: number;
  /** Milliseconds from arrival to the first byte written, the end, or -1 while pending. */
  ttfb: number;
  end: number;
  logs: LogLine[];
  /** Lines past MAX_LOG_LINES: counted, not kept. */
  logsDropped: number;
  error: unknown;
  /** The error as the debug page described it, so that capture() need not read the stack again. */
  described: { error: unknown; data: import('../errors/describe.js').ExceptionData } | undefined;
  /** req.log, made when the app first uses it. */
  log: import('./logger.js').Logger | undefined;
  /** The request's CPU profile, when it asked for one. */
  cpu: import('./cpu.js').CpuState | undefined;
  /** Queries, outgoing calls and spans: made on the first of them. */
  inside: import('./inside.js').Inside | undefined;
  /** What a command is (its name, kind, exit code): undefined for a request. */
  command: import('./command.js').CommandState | undefined;
  /** The OpenTelemetry trace it ran under, when the app traces (see instruments/otel.ts). */
  trace: { traceId: string; spanId: string } | undefined;
  /** The event loop and the heap as it lived them (see loop.ts). */
  loop: import('./loop.js').LoopState | undefined;
  /** Authentications, rate limits and validations it met, and their verdicts (see checks.ts). */
  checks: import('./checks.js').Check[] | undefined;
  /** What the app dump()ed, and how many past the bound (see dump.ts). */
  dumps: { kept: import('./dump.js').Dump[]; dropped: number; /** Characters the kept ones took (see DUMP_BUDGET). */ chars: number } | undefined;
  /** The messages it translated through i18next (see translations.ts). */
  translations: import('./translations.js').TranslationsState | undefined;
}

/**
 * What the hot path captures for one request: references and a few numbers.
 * Everything expensive (parsing, redaction, serialisation) is done later, from this.
 */
export interface RequestContext extends WorkContext {
  /** The response's prototype, patched: an app called as a plain handler (vhost, a wrapper) gives it another (see adopt). */
  proto: object;
  /** scheme://host as the client asked: the start of the profile's link and of its stored URL. */
  origin: string;
  req: IncomingMessage;
  res: ServerResponse;
  /** Router layers entered, as flat (layer, ms since start) pairs: one push each, spans made later. */
  trail: unknown[];
  /** The route that answers (its mount path and pattern) and its params, as they were when it was entered; cleared when it passes on. */
  route: string | undefined;
  /** The app's lines that sent a 4xx or 5xx no exception explains (its res.status(401).json(…), and the line that called a helper doing so): where to look first. */
  answeredAt: string[] | undefined;
  /** The router layer that failed it (running when a 4xx or 5xx went out, or passing an error on): its name, a tab and the app's line that mounted it. */
  answeredBy: string | undefined;
  routeLayers: unknown[] | undefined;
  params: unknown;
  /** The toolbar has been put in the body. */
  toolbar: boolean;
  /** The body res.send was given, while it sends the same with the toolbar in it. */
  sending: string | Buffer | undefined;
  /** An HTML file's chunks (res.sendFile, express.static) held until its end, for the toolbar: see holdsPage() in recorder.ts. */
  held: { chunks: Buffer[]; callbacks: (() => void)[] } | undefined;
  bodyChunks: (Buffer | string)[];
  /** What express-session's hooks saw of its session (see session.ts). */
  session: import('./session.js').SessionState | undefined;
  bodyKept: number;
  bodySize: number;
}

/** What the response's wrappers need of the recorder that owns a context. */
export interface RecorderSettings {
  debug: boolean;
  bodyLimit: number;
  /** Hands a finished request to storage. */
  done: (ctx: RequestContext) => void;
  /** Hands a finished command to storage. */
  commandDone: (ctx: WorkContext) => void;
  /** The body with the toolbar in it, or undefined to send it as it is. */
  inject?: <T extends string | Buffer>(req: IncomingMessage, res: ServerResponse, token: string, body: T, encoding: unknown) => T | undefined;
  /** Add Server-Timing to the app's responses. */
  serverTiming: boolean;
  /** Keep the values of a view's locals, not only their names. */
  viewLocals: boolean;
  /** Per request: GC pauses while in flight, heap used at start and end (see loop.ts). */
  heapAndGc: boolean;
  /** Keep AI calls' prompts and answers (see ai.ts). */
  aiContent: boolean;
  /** Hosts besides loopback whose calls carry the parent token. */
  linkHosts: string[];
  /** Trouble of the recorder's own, after the response: told, never thrown at the app. */
  failed: (err: unknown) => void;
  /** The response of ctx has another prototype now (an inner app's): patch that one too. */
  adopt: (req: unknown, res: unknown, ctx: RequestContext) => void;
  /** compression() is about to wrap the response's write and end: a page for the toolbar is held above them. */
  beforeCompression: (res: unknown, ctx: RequestContext) => void;
}

/** Where a response keeps its context: found through res even where async context is lost. */
export const kContext = Symbol('web-profiler.context');

/** The context of a response being recorded, for the error pages, the toolbar and error capture. */
export const contextOf = (res: unknown): RequestContext | undefined =>
  (res as { [kContext]?: RequestContext } | null)?.[kContext];

/*
 * Which request is running, for the exported logger, console capture, database drivers, outgoing
 * calls and spans (req.log needs none of this): AsyncLocalStorage follows each request across its
 * awaits, and code that runs synchronously in one of its router layers is its too (a library
 * that loses the async context, a pool's callback, still runs there). Code outside a request's own
 * (a client in the same process, a timer made at start-up) belongs to none: a request's context
 * is never given by guess.
 */
const requestStore = new AsyncLocalStorage<WorkContext>();
let running: RequestContext | undefined;

/**
 * A recorded request starts: runs `next` in its async context. What run() does, written out: its
 * frames (run, and this function's) would take the place of two of the app's own in every stack
 * V8 cuts at ten frames; this one is inlined into the recorder's.
 */
export function requestStarted(ctx: RequestContext, next: () => void): void {
  const outer = requestStore.getStore();
  requestStore.enterWith(ctx);
  try {
    next();
  } finally {
    requestStore.enterWith(outer as WorkContext);
  }
}

/** A router layer of ctx's starts running: returns the request it interrupts, for leave(). */
export function enter(ctx: RequestContext): RequestContext | undefined {
  const outer = running;
  running = ctx;
  return outer;
}

export function leave(outer: RequestContext | undefined): void {
  running = outer;
}

export function currentContext(): WorkContext | undefined {
  return requestStore.getStore() ?? running ?? processWork;
}

/** The script the whole process runs as (see register.ts): what no request or run claims is its. */
let processWork: WorkContext | undefined;

export function setProcessWork(ctx: WorkContext | undefined): void {
  processWork = ctx;
}

/** Runs fn as the unit of work ctx (a command), followed across awaits, whatever runs around it. */
export function runAs<T>(ctx: WorkContext, fn: () => T): T {
  return requestStore.run(ctx, fn);
}
