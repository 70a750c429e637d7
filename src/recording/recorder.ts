import type { NextFunction, Request, Response } from 'express';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { contextOf, kContext, requestFinished, requestStarted, type RequestContext } from './context.js';
import { hookLayers } from './layers.js';
import { logger, RequestLogger } from './logger.js';
import { originOf } from './url.js';

type Method = (this: ServerResponse, ...args: unknown[]) => unknown;
type Tracked = ServerResponse & { [kContext]?: RequestContext };

export interface RecorderDeps {
  debug: boolean;
  bodyLimit: number;
  nextToken: () => string;
  /** Hands a finished request to storage; called once per request, as it finishes: what it reads of req and res holds only then. */
  done: (ctx: RequestContext) => void;
  /** The final body with the toolbar in it, or undefined to send it as it is. */
  inject?: (req: IncomingMessage, res: ServerResponse, token: string, chunk: unknown, encoding: unknown) => Buffer | undefined;
}

export function recorder(deps: RecorderDeps) {
  const { debug, bodyLimit, nextToken, done, inject } = deps;

  function finish(this: Tracked) {
    const ctx = this[kContext];
    if (!ctx || ctx.end >= 0) return;
    ctx.end = performance.now() - ctx.start;
    if (ctx.ttfb < 0) ctx.ttfb = ctx.end;
    requestFinished(ctx);
    done(ctx);
  }

  /** Called as the headers go out, whatever sends them: every header write passes through writeHead. */
  function stamp(res: ServerResponse, ctx: RequestContext) {
    if (!res.hasHeader('x-debug-token')) setDebugHeaders(res, ctx);
    if (debug && !res.hasHeader('x-robots-tag')) res.setHeader('X-Robots-Tag', 'noindex');
  }

  function keep(ctx: RequestContext, chunk: unknown, encoding: unknown) {
    if (chunk == null || typeof chunk === 'function') return;
    const size = typeof chunk === 'string' ? Buffer.byteLength(chunk, encoding as BufferEncoding) : (chunk as Buffer).length ?? 0;
    if (ctx.ttfb < 0) ctx.ttfb = performance.now() - ctx.start;
    ctx.bodySize += size;
    if (ctx.bodyKept < bodyLimit) {
      ctx.bodyChunks.push(chunk as Buffer | string);
      ctx.bodyKept += size;
    }
  }

  /**
   * Express gives each app its own response and request prototypes (app.response, app.request;
   * mounted sub-apps inherit from them). Wrapping writeHead/write/end and defining req.log there,
   * once, costs no per-request closures or own properties; responses this recorder did not start
   * pass straight through.
   */
  const patched = new WeakSet<object>();
  function patchPrototypes(req: Request, res: Response) {
    const resProto = Object.getPrototypeOf(res) as Record<string, unknown>;
    if (patched.has(resProto)) return;
    patched.add(resProto);
    const writeHead0 = resProto.writeHead as Method;
    const write0 = resProto.write as Method;
    const end0 = resProto.end as Method;
    resProto.writeHead = function writeHead(this: Tracked, status: unknown, reason?: unknown, headers?: unknown) {
      const ctx = this[kContext];
      if (ctx !== undefined && ctx.recorder === recorderId && !this.headersSent) stamp(this, ctx);
      return writeHead0.call(this, status, reason, headers);
    };
    resProto.write = function write(this: Tracked, chunk: unknown, encoding?: unknown, cb?: unknown) {
      const ctx = this[kContext];
      if (ctx !== undefined && ctx.recorder === recorderId) keep(ctx, chunk, encoding);
      return write0.call(this, chunk, encoding, cb);
    };
    resProto.end = function end(this: Tracked, chunk?: unknown, encoding?: unknown, cb?: unknown) {
      const ctx = this[kContext];
      if (ctx === undefined || ctx.recorder !== recorderId) return end0.call(this, chunk, encoding, cb);
      keep(ctx, chunk, encoding);
      const injected = inject && chunk != null && typeof chunk !== 'function' ? inject(ctx.req, this, ctx.token, chunk, encoding) : undefined;
      if (injected) return end0.call(this, injected, typeof encoding === 'function' ? encoding : cb);
      return end0.call(this, chunk, encoding, cb);
    };
    defineLog(Object.getPrototypeOf(req));
  }
  const recorderId = {};
  let lastApp: unknown;

  return function webProfilerRecorder(req: Request, res: Response, next: NextFunction) {
    patchPrototypes(req, res);
    const ctx: RequestContext = {
      recorder: recorderId,
      token: nextToken(),
      origin: originOf(req),
      parent: null,
      time: Date.now(),
      start: performance.now(),
      ttfb: -1,
      end: -1,
      req,
      res,
      logs: [],
      trail: [],
      error: undefined,
      bodyChunks: [],
      bodyKept: 0,
      bodySize: 0,
      log: undefined,
    };
    (res as Tracked)[kContext] = ctx;
    // 'close' follows 'finish' on every response (keep-alive too) and also comes alone on abort.
    res.on('close', finish);
    if (req.app !== lastApp) {
      hookLayers(req.app);
      lastApp = req.app;
    }
    requestStarted(ctx, next);
  };
}

const definedLog = new WeakSet<object>();

/** req.log on the app's request prototype: made on first use, bound to its request. */
function defineLog(reqProto: object): void {
  if (definedLog.has(reqProto)) return;
  definedLog.add(reqProto);
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

function setDebugHeaders(res: ServerResponse, ctx: RequestContext): void {
  try {
    res.setHeader('X-Debug-Token', ctx.token);
    res.setHeader('X-Debug-Token-Link', `${ctx.origin}/_profiler/${ctx.token}`);
  } catch {
    // A Host header Node refuses to echo back: the token alone still identifies the profile.
  }
}
