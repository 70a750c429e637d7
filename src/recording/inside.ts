import { performance } from 'node:perf_hooks';
import { currentContext, type RequestContext, type WorkContext } from './context.js';
import { callerChain, callerFrame } from './caller.js';
import { isControllerMethod } from './handler-name.js';

/** One statement a database driver ran for the request. Times are ms since the request arrived. */
export interface QueryEntry {
  driver: string;
  sql: string;
  /** The driver's parameters as the app gave them: copied, bounded, when the request is captured. */
  params: unknown;
  start: number;
  end: number;
  /** Rows returned or changed, when the driver says. */
  rows: number | undefined;
  error: unknown;
  caller: string | undefined;
  /** The app's lines that led to the caller's, innermost first, where its stack had them (a wrapper's caller, the route). */
  via: string[] | undefined;
  /** Where the caller came from when the statement's own stack held no line of the app's (see answeredFrom). */
  callerFrom?: CallerFrom;
  /** Time spent waiting for a pooled connection before the statement was sent. */
  wait: number | undefined;
  /** Its details are kept (within MAX_QUERIES); otherwise it is only counted and timed. */
  kept: boolean;
  /** What EXPLAIN needs afterwards: the connection it ran on. Never leaves the request's thread. */
  explain: ExplainRef | undefined;
}

/** A SELECT and the connection it can be explained on later, while the app keeps it open. */
export interface ExplainRef {
  driver: string;
  connection: object;
  sql: string;
  params: unknown;
}

/** One outgoing HTTP call. */
export interface CallEntry {
  /** `otel`: an HTTP client span of a library the profiler does not follow itself (see instruments/otel.ts). */
  api: 'fetch' | 'http' | 'otel';
  method: string;
  url: string;
  start: number;
  end: number;
  status: number | undefined;
  error: unknown;
  requestHeaders: unknown;
  responseHeaders: unknown;
  requestSize: number | undefined;
  responseSize: number | undefined;
  caller: string | undefined;
}

/** One span(name, fn) of the app's, or an OpenTelemetry span (with its scope and attributes). */
export interface MarkEntry {
  name: string;
  start: number;
  end: number;
  error: boolean;
  attributes?: Record<string, unknown>;
  /** The instrumentation that made it. */
  scope?: string;
}

/** A job the request or command added to a queue (BullMQ: see instruments/bullmq.ts). */
export interface QueuedJob {
  queue: string;
  /** The job's name (the names, for addBulk). */
  name: string | undefined;
  ids: string[];
  start: number;
  end: number;
  caller: string | undefined;
  error: unknown;
}

/** What ran inside a request: made on its first query, call, command, render, mail or span. */
export interface Inside {
  queries: QueryEntry[];
  /** Every statement, including those past MAX_QUERIES that keep no details. */
  queryCount: number;
  queryTime: number;
  calls: CallEntry[];
  callCount: number;
  marks: MarkEntry[];
  /** Cache (Redis) commands, a pipeline or MULTI as one entry: see commands.ts. */
  commands: import('./commands.js').CommandEntry[];
  commandCount: number;
  /** Templates rendered: see renders.ts. */
  renders: import('./renders.js').RenderEntry[];
  /** Mail sent: see mails.ts. */
  mails: import('./mails.js').MailEntry[];
  /** Bytes of mail content kept so far (see MAIL_KEPT). */
  mailKept: number;
  /** Jobs queued. */
  queued: QueuedJob[];
  /** Calls to AI models: see ai.ts. */
  ai: import('./ai.js').AiCallEntry[];
}

/** Details are kept for this many statements (and calls, and spans) per request; the rest are counted and timed. */
export const MAX_QUERIES = 500;
/** The caller's line is looked for in the first this many statements of a request: a stack costs some µs, and a loop shows in these already. */
export const MAX_CALLERS = 100;
/** A statement's own line and the app's lines that led to it, at most. */
const MAX_CHAIN = 4;

export function insideOf(ctx: WorkContext): Inside {
  if (ctx.inside !== undefined) return ctx.inside;
  return (ctx.inside = { queries: [], queryCount: 0, queryTime: 0, calls: [], callCount: 0, marks: [], commands: [], commandCount: 0, renders: [], mails: [], mailKept: 0, queued: [], ai: [] });
}

export const sinceStart = (ctx: WorkContext): number => performance.now() - ctx.start;

/**
 * A statement starts. Returns its entry (to be ended by queryEnded), or a bare one that only
 * counts, past the cap. Drivers call this with the request the statement belongs to.
 */
export function queryStarted(ctx: WorkContext, driver: string, sql: string, params: unknown, caller?: string): QueryEntry {
  const inside = insideOf(ctx);
  inside.queryCount++;
  const entry: QueryEntry = {
    driver, sql, params, start: sinceStart(ctx), end: -1, rows: undefined, error: undefined,
    caller: undefined, via: undefined, wait: undefined, kept: false, explain: undefined,
  };
  if (inside.queries.length < MAX_QUERIES) {
    entry.kept = true;
    if (caller !== undefined || awaitedAt !== undefined) entry.caller = caller ?? awaitedAt;
    else if (inside.queries.length < MAX_CALLERS) {
      const chain = callerChain(MAX_CHAIN);
      entry.caller = chain[0];
      if (chain.length > 1) entry.via = chain.slice(1);
    }
    inside.queries.push(entry);
  }
  return entry;
}

export function queryEnded(ctx: WorkContext, entry: QueryEntry, rows: number | undefined, error: unknown): void {
  if (entry.end >= 0) return;
  entry.end = sinceStart(ctx);
  entry.rows = rows;
  if (error !== undefined) entry.error = error;
  insideOf(ctx).queryTime += entry.end - entry.start;
}

/** The app's line that awaited the query running now, where its driver's stack no longer has it (see instruments/drizzle.ts). */
let awaitedAt: string | undefined;

/** The app's line that led here: on the stack, or where it awaited the query under way (a pool asks for a connection there). */
export const appCaller = (): string | undefined => awaitedAt ?? callerFrame();

/** Runs fn, whose statements the app awaited at `caller`. */
export function awaitedFrom<T>(caller: string | undefined, fn: () => T): T {
  const outer = awaitedAt;
  awaitedAt = caller;
  try {
    return fn();
  } finally {
    awaitedAt = outer;
  }
}

/** Whether a line is still worth looking for: within the first MAX_CALLERS statements of the request. */
export const wantsCaller = (ctx: WorkContext): boolean => (ctx.inside?.queries.length ?? 0) < MAX_CALLERS;

/** The request a driver's call belongs to, unless the profiler is at work itself. */
export function requestOf(): WorkContext | undefined {
  return ownWork > 0 ? undefined : currentContext();
}

let ownWork = 0;

/** Runs the profiler's own statements (EXPLAIN) unrecorded. */
export function unrecorded<T>(fn: () => T): T {
  ownWork++;
  try {
    return fn();
  } finally {
    ownWork--;
  }
}

/** The request's figures so far as a Server-Timing value: database, outgoing HTTP, and the whole, in ms. */
export function serverTiming(ctx: WorkContext): string {
  const now = sinceStart(ctx);
  const inside = ctx.inside;
  let http = 0;
  for (const call of inside?.calls ?? []) http += (call.end < 0 ? now : call.end) - call.start;
  const queries = inside?.queryCount ?? 0;
  const calls = inside?.callCount ?? 0;
  return `db;dur=${(inside?.queryTime ?? 0).toFixed(2)};desc="${queries} ${queries === 1 ? 'query' : 'queries'}", ` +
    `http;dur=${http.toFixed(2)};desc="${calls} ${calls === 1 ? 'call' : 'calls'}", app;dur=${now.toFixed(2)}`;
}

/** `response`: the caller is the app's line that answered the request; `handler`: the name of the route's handler (no line of the app's answered either). */
export type CallerFrom = 'response' | 'handler';

/**
 * Statements whose stack held no line of the app's (an ORM that detaches them, code compiled to
 * generator-based async) take the nearest the request has, marked as such: the app's line that
 * answers the request, as its response goes out, or else (a framework that answers for the
 * handler, as Nest does) the route handler's name. Costs nothing when every statement has its own.
 */
export function answeredFrom(ctx: RequestContext): void {
  const inside = ctx.inside;
  if (inside === undefined) return;
  let caller: string | undefined | null = null;
  let from: CallerFrom = 'response';
  // A model call the ai SDK streams is made from a promise it detached from the app's call.
  for (const q of inside.ai.length === 0 ? inside.queries : [...inside.queries, ...inside.ai]) {
    if ((q as QueryEntry).kept === false || q.caller !== undefined) continue;
    if (caller === null) {
      caller = callerFrame();
      if (caller === undefined) {
        caller = handlerOf(ctx.routeLayers);
        from = 'handler';
      }
    }
    if (caller === undefined) return;
    q.caller = caller;
    q.callerFrom = from;
  }
}

/** The name a framework gave the route's handler (Nest's Controller.method): a wrapper's name (express-async-handler's asyncUtilWrap) is no caller. */
function handlerOf(layers: unknown[] | undefined): string | undefined {
  for (let i = (layers?.length ?? 0) - 1; i >= 0; i--) {
    const name = (layers![i] as { name?: unknown })?.name;
    if (typeof name === 'string' && isControllerMethod(name)) return name;
  }
  return undefined;
}
