import type { NextFunction, Request, Response } from 'express';
import { ServerResponse, validateHeaderValue, type IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import { contextOf, kContext, requestStarted, type RecorderSettings, type RequestContext } from './context.js';
import { hookLayers } from './layers.js';
import { logger, pinoHttpLoaded, RequestLogger } from './logger.js';
import { callerFrames } from './caller.js';
import { checksAtAnswer, layerNamed } from './checks.js';
import { answeredFrom, serverTiming } from './inside.js';
import { cpuNoteOther, cpuRunning, startCpu, stopCpu } from './cpu.js';
import { isToken } from './token.js';
import { originOf } from './url.js';
import { activeTrace } from './trace.js';
import { loopFinished, loopStarted } from './loop.js';

type Method = (this: ServerResponse, ...args: unknown[]) => unknown;
type Tracked = ServerResponse & { [kContext]?: RequestContext; req?: IncomingMessage };

export interface RecorderDeps extends Omit<RecorderSettings, 'adopt' | 'beforeCompression'> {
  nextToken: () => string;
  /** An app's first request: by now it has loaded its drivers and set its settings. */
  appSeen: (app: unknown) => void;
}

/**
 * The recording middleware. The first recorder to see a request owns it (a profiler mounted in an
 * app and again in a sub-app, or two profilers, record each request once); the response's
 * wrappers act for whichever recorder owns the response.
 */
export function recorder(deps: RecorderDeps) {
  const { nextToken, appSeen, ...given } = deps;
  const settings: RecorderSettings = {
    ...given,
    adopt(req, res, ctx) {
      patchPrototypes(req as Request, res as Response);
      ctx.proto = Object.getPrototypeOf(res);
      hookLayers((req as Request).app);
    },
    beforeCompression: (res, ctx) => holdAboveCompression(res as Tracked, ctx),
  };
  let lastApp: unknown;

  return Object.assign(function webProfilerRecorder(req: Request, res: Response, next: NextFunction) {
    patchPrototypes(req, res);
    const ctx: RequestContext = {
      recorder: settings,
      proto: Object.getPrototypeOf(res),
      token: nextToken(),
      origin: originOf(req),
      parent: parentOf(req),
      time: Date.now(),
      start: performance.now(),
      ttfb: -1,
      end: -1,
      req,
      res,
      logs: [],
      logsDropped: 0,
      trail: [],
      error: undefined,
      described: undefined,
      route: undefined,
      answeredAt: undefined,
      answeredBy: undefined,
      routeLayers: undefined,
      params: undefined,
      toolbar: false,
      sending: undefined,
      held: undefined,
      bodyChunks: [],
      session: undefined,
      bodyKept: 0,
      bodySize: 0,
      log: undefined,
      inside: undefined,
      cpu: undefined,
      command: undefined,
      trace: activeTrace(),
      loop: undefined,
      checks: undefined,
      dumps: undefined,
      translations: undefined,
    };
    (res as Tracked)[kContext] = ctx;
    // 'close' follows 'finish' on every response (keep-alive too) and also comes alone on abort.
    res.on('close', finish);
    if (req.app !== lastApp) {
      hookLayers(req.app);
      appSeen(req.app);
      lastApp = req.app;
    }
    if (cpuRunning()) cpuNoteOther(ctx);
    const cpu = (req as { [kProfileCpu]?: 'header' | 'cookie' })[kProfileCpu];
    if (cpu !== undefined) startCpu(ctx, cpu);
    loopStarted(ctx);
    requestStarted(ctx, next);
  }, { finishEnded: (late = false) => finishEnded(settings, late), lingers: (token: string) => lingering.has(token), settings });
}

/** The profile of the request that made this call, when the caller runs a profiler too (see inside/http-client.ts). */
function parentOf(req: Request): string | null {
  const parent = req.headers['x-debug-parent-token'];
  return isToken(parent) ? parent : null;
}

/** Set on a request the profiler's access check let ask for a CPU profile (see profiler.ts): how it asked. */
export const kProfileCpu = Symbol('web-profiler.cpu');

/** Responses the app has ended whose 'close' has not come yet: what flush() must not miss. */
const ended = new Set<Tracked>();

/**
 * Finish now the requests of `recorder` whose responses the app has ended: flush() then stores
 * every answered request; `late`: those whose work after the response is still running too, as
 * they are (flush() and close(); a page waits for them instead).
 */
function finishEnded(recorder: RecorderSettings, late: boolean): void {
  for (const res of ended) if (res[kContext]?.recorder === recorder) finish.call(res);
  if (late) for (const ctx of lingering.values()) if (ctx.recorder === recorder) complete(ctx);
}

/**
 * Requests answered while work they started still runs (a mail sent without awaiting it, a query,
 * a call), by token: their profile waits for that work, up to LATE_MS, so that it has the mail's
 * answer and the query's rows; what the request's own context records meanwhile is its too, after
 * the response (Symfony's late collectors). A request with nothing running is stored at once.
 */
const lingering = new Map<string, RequestContext>();
const LATE_MS = 2_000;
/** How often lingering requests are looked at: their work ends in the app's callbacks, which the profiler does not wrap for this. */
const LATE_CHECK_MS = 10;
let lateTimer: NodeJS.Timeout | undefined;

function stillWorking(ctx: RequestContext): boolean {
  const inside = ctx.inside;
  if (inside === undefined) return false;
  const running = (entries: { end: number }[]) => entries.some((e) => e.end < 0);
  return running(inside.queries) || running(inside.calls) || running(inside.commands) || running(inside.mails) || running(inside.ai);
}

function lookAtLingering(): void {
  lateTimer = undefined;
  const now = performance.now();
  for (const ctx of lingering.values()) if (!stillWorking(ctx) || now - ctx.start - ctx.end >= LATE_MS) complete(ctx);
  if (lingering.size > 0) lateTimer = setTimeout(lookAtLingering, LATE_CHECK_MS).unref();
}

/** The request's profile is made: what it recorded is handed to storage, and a page waiting for it is told. */
function complete(ctx: RequestContext): void {
  lingering.delete(ctx.token);
  try {
    ctx.recorder.done(ctx);
  } catch (err) {
    ctx.recorder.failed(err);
  }
  if (awaited.size !== 0) awaited.get(ctx.token)?.settle();
}

/** Pages waiting for a request that was still running when its profile was asked for, by token: its end, and what tells them. */
const awaited = new Map<string, { done: Promise<void>; settle: () => void }>();

/**
 * Resolves once the request that drew `token` has finished, or after `ceiling` ms. Its head (and
 * the debug token) can reach a client long before its end: a stream, a body split around a
 * session store's write (express-session sends all but the last byte, then touches the store).
 */
export function requestFinished(token: string, ceiling: number): Promise<void> {
  const waiting = awaited.get(token);
  if (waiting !== undefined) return waiting.done;
  let settle!: () => void;
  const done = new Promise<void>((resolve) => {
    const timer = setTimeout(() => settle(), ceiling);
    settle = () => {
      clearTimeout(timer);
      awaited.delete(token);
      resolve();
    };
  });
  awaited.set(token, { done, settle });
  return done;
}

function finish(this: Tracked) {
  ended.delete(this);
  const ctx = this[kContext];
  if (!ctx || ctx.end >= 0) return;
  try {
    ctx.end = performance.now() - ctx.start;
    if (ctx.ttfb < 0) ctx.ttfb = ctx.end;
    if (ctx.cpu !== undefined) stopCpu(ctx);
    loopFinished(ctx);
  } catch (err) {
    // After the response, on an event of the app's: nothing may be thrown from here.
    ctx.recorder.failed(err);
  }
  if (!stillWorking(ctx)) return complete(ctx);
  lingering.set(ctx.token, ctx);
  lateTimer ??= setTimeout(lookAtLingering, LATE_CHECK_MS).unref();
}

/** A response chunk as bytes or text: what Node itself accepts. Anything else is the app's mistake, which Node reports. */
function keep(ctx: RequestContext, chunk: unknown, encoding: unknown) {
  let size: number;
  let kept: Buffer | string;
  if (typeof chunk === 'string') {
    kept = chunk;
    size = Buffer.byteLength(chunk, Buffer.isEncoding(encoding as string) ? (encoding as BufferEncoding) : 'utf8');
  } else if (ArrayBuffer.isView(chunk)) {
    kept = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    size = chunk.byteLength;
  } else {
    return;
  }
  if (ctx.ttfb < 0) ctx.ttfb = performance.now() - ctx.start;
  ctx.bodySize += size;
  if (ctx.bodyKept < ctx.recorder.bodyLimit) {
    ctx.bodyChunks.push(kept);
    ctx.bodyKept += size;
  }
}

/** The largest HTML file held for the toolbar; a larger one goes out as it comes, without it. */
const HOLD_LIMIT = 2 * 1024 * 1024;

/**
 * Whether a response that starts with res.write is a whole HTML page of a known length, as
 * res.sendFile and express.static send a file: its chunks are then held until its end, for the
 * toolbar (Content-Length fixed up). Not a HEAD, a range, a 304, an encoded or a streamed page.
 */
function holdsPage(res: Tracked, ctx: RequestContext): boolean {
  if (ctx.recorder.inject === undefined || ctx.toolbar || ctx.sending !== undefined || res.statusCode !== 200 || res.req?.method === 'HEAD') return false;
  const length = Number(res.getHeader('content-length'));
  if (!(length > 0 && length <= HOLD_LIMIT) || res.getHeader('content-encoding') !== undefined || res.getHeader('content-range') !== undefined) return false;
  return /^\s*text\/html\s*(;|$)/i.test(String(res.getHeader('content-type') ?? ''));
}

/**
 * The held page's end: the whole file is here, and goes out through `end` with the toolbar, at the
 * length that has; the callbacks its writes and end were given are called once it is out.
 */
function endHeld(res: Tracked, ctx: RequestContext, end: Method, chunk: unknown, encoding: unknown, cb: unknown): unknown {
  const held = ctx.held!;
  ctx.held = undefined;
  // end(cb), end(chunk, cb), end(chunk, encoding, cb), as Node takes them.
  if (typeof chunk === 'function') [cb, chunk] = [chunk, undefined];
  else if (typeof encoding === 'function') [cb, encoding] = [encoding, undefined];
  if (chunk != null) held.chunks.push(asBuffer(chunk, encoding));
  if (typeof cb === 'function') held.callbacks.push(cb as () => void);
  if (held.callbacks.length > 0) res.once('finish', () => { for (const callback of held.callbacks) callback(); });
  const page = Buffer.concat(held.chunks);
  return end.call(res, injectToolbar(res, ctx, page, undefined) ?? page);
}

function hold(ctx: RequestContext, chunk: unknown, encoding: unknown, cb: unknown): boolean {
  const held = (ctx.held ??= { chunks: [], callbacks: [] });
  if (typeof encoding === 'function') [cb, encoding] = [encoding, undefined];
  if (chunk != null) held.chunks.push(asBuffer(chunk, encoding));
  if (typeof cb === 'function') held.callbacks.push(cb as () => void);
  return true;
}

const asBuffer = (chunk: unknown, encoding: unknown): Buffer =>
  typeof chunk === 'string' ? Buffer.from(chunk, Buffer.isEncoding(encoding as string) ? (encoding as BufferEncoding) : 'utf8') : Buffer.isBuffer(chunk) ? chunk : Buffer.from((chunk as ArrayBufferView).buffer, (chunk as ArrayBufferView).byteOffset, (chunk as ArrayBufferView).byteLength);

/** Marks our own wrappers: a sub-app's prototype inherits them from its parent's, and must not get a second layer. */
const kOurs = Symbol('web-profiler.wrapper');
const mark = <F extends object>(fn: F): F => Object.assign(fn, { [kOurs]: true });
const patched = new WeakSet<object>();

/**
 * Express gives each app its own response and request prototypes (app.response, app.request;
 * mounted sub-apps inherit from them). Wrapping writeHead/write/end/send and defining req.log
 * there, once, costs no per-request closures or own properties; responses no recorder started
 * pass straight through.
 */
function patchPrototypes(req: Request, res: Response) {
  const resProto = Object.getPrototypeOf(res) as Record<string, unknown>;
  if (patched.has(resProto)) return;
  patched.add(resProto);
  defineLog(Object.getPrototypeOf(req));
  if ((resProto.writeHead as { [kOurs]?: boolean })[kOurs]) return;
  const writeHead0 = resProto.writeHead as Method;
  const write0 = resProto.write as Method;
  const end0 = resProto.end as Method;
  const send0 = resProto.send as Method | undefined;
  resProto.writeHead = mark(function writeHead(this: Tracked, status: unknown, reason?: unknown, headers?: unknown) {
    const ctx = this[kContext];
    if (ctx === undefined || this.headersSent) return writeHead0.call(this, status, reason, headers);
    answeredFrom(ctx);
    // A refusal or a failure no exception explains: the app's line that sent it (a stack, on failures only).
    if (ctx.error === undefined && Number(status) >= 400) {
      ctx.answeredAt = callerFrames(2);
      ctx.answeredBy = layerNamed(ctx);
      checksAtAnswer(ctx, Number(status));
    }
    // Node takes (status, headers) as well as (status, reason, headers).
    if (typeof reason === 'string') return writeHead0.call(this, status, reason, stamped(this, ctx, headers));
    return writeHead0.call(this, status, stamped(this, ctx, reason), headers);
  });
  resProto.write = mark(function write(this: Tracked, chunk: unknown, encoding?: unknown, cb?: unknown) {
    const ctx = this[kContext];
    if (ctx !== undefined) {
      keep(ctx, chunk, encoding);
      if (ctx.held !== undefined || (!this.headersSent && holdsPage(this, ctx))) return hold(ctx, chunk, encoding, cb);
    }
    return write0.call(this, chunk, encoding, cb);
  });
  resProto.end = mark(function end(this: Tracked, chunk?: unknown, encoding?: unknown, cb?: unknown) {
    const ctx = this[kContext];
    if (ctx === undefined) return end0.call(this, chunk, encoding, cb);
    // Inside res.send, which has seen to the toolbar, the body is kept as the app gave it to send;
    // otherwise as the app wrote it, before any toolbar.
    const sending = ctx.sending;
    keep(ctx, sending !== undefined && chunk != null ? sending : chunk, encoding);
    ended.add(this);
    if (ctx.held !== undefined) return endHeld(this, ctx, end0, chunk, encoding, cb);
    const injected = sending === undefined && (typeof chunk === 'string' || Buffer.isBuffer(chunk)) ? injectToolbar(this, ctx, chunk, encoding) : undefined;
    return end0.call(this, injected ?? chunk, encoding, cb);
  });
  // Express's res.send computes Content-Length and ETag from the body and answers HEAD without it:
  // the toolbar goes in before, so that GET and HEAD agree and the ETag is the body's.
  if (typeof send0 === 'function') {
    resProto.send = mark(function send(this: Tracked, body?: unknown) {
      const ctx = this[kContext];
      if (ctx === undefined || ctx.toolbar || (typeof body !== 'string' && !Buffer.isBuffer(body))) return send0.call(this, body);
      // What res.send does first for a string with no type, done a moment earlier so the toolbar can tell it is a page.
      if (typeof body === 'string' && this.getHeader('content-type') === undefined) (this as unknown as Response).type('html');
      const injected = injectToolbar(this, ctx, body, undefined);
      ctx.sending = body;
      try {
        return send0.call(this, injected ?? body);
      } finally {
        ctx.sending = undefined;
      }
    });
  }
}

/**
 * compression() puts its own write and end on the response, which compress what they are given
 * and pass it to those they found (ours, on the prototype): a file page would reach ours already
 * compressed, with no room for the toolbar. As its layer is entered, the response's write and end
 * become accessors: what compression() sets is kept as the next step, and a page (as holdsPage
 * says) is held above it until its end, then handed to it whole, with the toolbar and its length.
 */
function holdAboveCompression(res: Tracked, ctx: RequestContext): void {
  if (ctx.recorder.inject === undefined || Object.hasOwn(res, 'write') || Object.hasOwn(res, 'end')) return;
  const proto = Object.getPrototypeOf(res) as { write: Method; end: Method };
  // The next steps: the prototype's (ours) until compression() sets its own.
  const next = { write: proto.write, end: proto.end };
  above(res, 'write', next, function (this: Tracked, chunk: unknown, encoding?: unknown, cb?: unknown) {
    if (ctx.held !== undefined || (!this.headersSent && holdsPage(this, ctx))) return hold(ctx, chunk, encoding, cb);
    return next.write.call(this, chunk, encoding, cb);
  });
  above(res, 'end', next, function (this: Tracked, chunk?: unknown, encoding?: unknown, cb?: unknown) {
    return ctx.held === undefined ? next.end.call(this, chunk, encoding, cb) : endHeld(this, ctx, next.end, chunk, encoding, cb);
  });
}

/**
 * res[name] as an accessor: the first function set on it (compression's) is kept as the next step
 * and `ours` is what the response has; whatever sets one after it (express-session's end) has
 * found ours there and wraps it, and the property is a plain one again.
 */
function above(res: Tracked, name: 'write' | 'end', next: Record<'write' | 'end', Method>, ours: Method): void {
  let set = false;
  Object.defineProperty(res, name, {
    configurable: true,
    enumerable: true,
    get: () => (set ? ours : next[name]),
    set: (fn: Method) => {
      if (set) Object.defineProperty(res, name, { value: fn, writable: true, configurable: true, enumerable: true });
      else [next[name], set] = [fn, true];
    },
  });
}

/** The body with the toolbar, or undefined: whatever goes wrong in there, the app's body goes out as it was. */
function injectToolbar<T extends string | Buffer>(res: Tracked, ctx: RequestContext, body: T, encoding: unknown): T | undefined {
  const inject = ctx.recorder.inject;
  if (inject === undefined || ctx.toolbar || res.req === undefined) return undefined;
  try {
    const injected = inject(res.req, res, ctx.token, body, encoding);
    if (injected !== undefined) ctx.toolbar = true;
    return injected;
  } catch (err) {
    ctx.recorder.failed(err);
    return undefined;
  }
}

/** Node's own store of the headers set so far: writeHead takes a raw array as it is only while there is none. */
const kOutHeaders = Object.getOwnPropertySymbols(new ServerResponse({ method: 'GET' } as IncomingMessage)).find((s) => s.description === 'kOutHeaders');

/**
 * The headers argument of writeHead with the debug headers added, as the headers go out. A raw
 * array ([name, value, ...] or [[name, value], ...]) keeps its repeats only while nothing was set
 * through setHeader (Node then sends it as it is): ours are appended to a copy of it. Otherwise
 * they are set the usual way, before Node sets the app's over them, so that the app's win.
 */
function stamped(res: ServerResponse, ctx: RequestContext, headers: unknown): unknown {
  if (Array.isArray(headers) && kOutHeaders !== undefined && !(res as unknown as Record<symbol, unknown>)[kOutHeaders]) return withDebugPairs(ctx, headers);
  if (!res.hasHeader('x-debug-token')) {
    res.setHeader('X-Debug-Token', ctx.token);
    const link = linkOf(ctx);
    if (link !== undefined) res.setHeader('X-Debug-Token-Link', link);
  }
  if (ctx.recorder.debug && !res.hasHeader('x-robots-tag')) res.setHeader('X-Robots-Tag', 'noindex');
  // The toolbar's one-shot cookie: this response, the one it asked to profile, clears it.
  if (ctx.cpu?.fromCookie) res.appendHeader('Set-Cookie', CLEAR_CPU_COOKIE);
  if (ctx.recorder.serverTiming) {
    const given = res.getHeader('server-timing');
    res.setHeader('Server-Timing', given === undefined ? serverTiming(ctx) : [...[given].flat().map(String), serverTiming(ctx)]);
  }
  return headers;
}

/** A raw array of headers with the debug headers it lacks appended, in its own shape. One Node refuses stays as it is. */
function withDebugPairs(ctx: RequestContext, headers: unknown[]): unknown[] {
  const nested = headers.length > 0 && Array.isArray(headers[0]);
  if (!nested && headers.length % 2 !== 0) return headers;
  const given = new Set<string>();
  for (let i = 0; i < headers.length; i += nested ? 1 : 2) given.add(String(nested ? (headers[i] as unknown[])[0] : headers[i]).toLowerCase());
  const ours: [string, string][] = [];
  if (!given.has('x-debug-token')) {
    ours.push(['X-Debug-Token', ctx.token]);
    const link = linkOf(ctx);
    if (link !== undefined) ours.push(['X-Debug-Token-Link', link]);
  }
  if (ctx.recorder.debug && !given.has('x-robots-tag')) ours.push(['X-Robots-Tag', 'noindex']);
  if (ctx.recorder.serverTiming) ours.push(['Server-Timing', serverTiming(ctx)]);
  if (ctx.cpu?.fromCookie) ours.push(['Set-Cookie', CLEAR_CPU_COOKIE]);
  if (ours.length === 0) return headers;
  return nested ? [...headers, ...ours] : [...headers, ...ours.flat()];
}

const CLEAR_CPU_COOKIE = '_wp_profile=; Path=/; Max-Age=0; SameSite=Strict';

/** The profile's absolute link, or undefined for a Host header Node refuses to echo back: the token alone still names the profile. */
function linkOf(ctx: RequestContext): string | undefined {
  const link = `${ctx.origin}/_profiler/${ctx.token}`;
  try {
    validateHeaderValue('X-Debug-Token-Link', link);
    return link;
  } catch {
    return undefined;
  }
}

const definedLog = new WeakSet<object>();

/**
 * req.log on the app's request prototype (unless pino-http is loaded, which sets its own): made on
 * first use, bound to its request. And req.id, the profile's token, unless something defined one
 * before: pino-http (and other request-id middleware) keep an existing req.id, so their access-log
 * lines name the profile.
 */
function defineLog(reqProto: object): void {
  if (definedLog.has(reqProto)) return;
  definedLog.add(reqProto);
  const ownLog = !pinoHttpLoaded();
  if (!('id' in reqProto)) {
    Object.defineProperty(reqProto, 'id', {
      configurable: true,
      get(this: Request) {
        return contextOf(this.res)?.token;
      },
      set(this: Request, value: unknown) {
        Object.defineProperty(this, 'id', { value, writable: true, configurable: true, enumerable: true });
      },
    });
  }
  if (ownLog) defineRequestLogger(reqProto);
}

function defineRequestLogger(reqProto: object): void {
  Object.defineProperty(reqProto, 'log', {
    configurable: true,
    get(this: Request) {
      const ctx = contextOf(this.res);
      if (!ctx) return logger;
      return (ctx.log ??= new RequestLogger(ctx));
    },
    set(this: Request, value: unknown) {
      Object.defineProperty(this, 'log', { value, writable: true, configurable: true, enumerable: true });
    },
  });
}
