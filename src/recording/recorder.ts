import type { NextFunction, Request, Response } from 'express';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { kContext, requestStore, type RequestContext } from './context.js';
import { instrumentStack, routerStack } from './layers.js';
import { requestLogger } from './logger.js';

const kWrite = Symbol('web-profiler.write');
const kEnd = Symbol('web-profiler.end');

type Method = (this: ServerResponse, ...args: unknown[]) => unknown;
type Tracked = ServerResponse & { [kContext]?: RequestContext; [kWrite]: Method; [kEnd]: Method };

export interface RecorderDeps {
  debug: boolean;
  bodyLimit: number;
  nextToken: () => string;
  /** Hands a finished request to storage; called once per request, after the response. */
  done: (ctx: RequestContext) => void;
  /** The final body with the toolbar in it, or undefined to send it as it is. */
  inject?: (req: IncomingMessage, res: ServerResponse, token: string, chunk: unknown, encoding: unknown) => Buffer | undefined;
}

/**
 * The recording middleware. Its work per request is a handful of property writes: the context
 * holds references, and everything that costs (collecting, redacting, serialising) runs later.
 */
export function recorder(deps: RecorderDeps) {
  const { debug, bodyLimit, nextToken, done, inject } = deps;

  function finish(this: Tracked) {
    const ctx = this[kContext];
    if (!ctx || ctx.end >= 0) return;
    ctx.end = performance.now() - ctx.start;
    if (ctx.ttfb < 0) ctx.ttfb = ctx.end;
    ctx.aborted = !this.writableFinished;
    const req = ctx.req as Request;
    // Read now: the router restores params and route as it unwinds.
    ctx.route = req.route?.path;
    ctx.params = req.params;
    ctx.rss = process.memoryUsage.rss();
    ctx.remoteAddress = req.socket?.remoteAddress;
    for (const span of ctx.spans) if (span.end < 0) span.end = ctx.end;
    done(ctx);
  }

  function stamp(res: Tracked, ctx: RequestContext) {
    if (res.headersSent) return;
    if (!res.hasHeader('x-debug-token')) setDebugHeaders(res, ctx.req as Request, ctx.token);
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

  // Shared by every response: they find their context through `this`, so no closure is made per request.
  function write(this: Tracked, chunk: unknown, encoding?: unknown, cb?: unknown) {
    const ctx = this[kContext]!;
    stamp(this, ctx);
    keep(ctx, chunk, encoding);
    return this[kWrite].call(this, chunk, encoding, cb);
  }
  function end(this: Tracked, chunk?: unknown, encoding?: unknown, cb?: unknown) {
    const ctx = this[kContext]!;
    keep(ctx, chunk, encoding);
    const injected = inject && chunk != null && typeof chunk !== 'function' ? inject(ctx.req, this, ctx.token, chunk, encoding) : undefined;
    stamp(this, ctx);
    if (injected) return this[kEnd].call(this, injected, typeof encoding === 'function' ? encoding : cb);
    return this[kEnd].call(this, chunk, encoding, cb);
  }

  return function webProfilerRecorder(req: Request, res: Response, next: NextFunction) {
    const ctx: RequestContext = {
      token: nextToken(),
      parent: null,
      time: Date.now(),
      start: performance.now(),
      ttfb: -1,
      end: -1,
      req,
      res,
      logs: [],
      spans: [],
      error: undefined,
      route: undefined,
      params: undefined,
      bodyChunks: [],
      bodyKept: 0,
      bodySize: 0,
      rss: 0,
      aborted: false,
      remoteAddress: undefined,
    };
    const tracked = res as unknown as Tracked;
    tracked[kContext] = ctx;
    tracked[kWrite] = res.write as Method;
    tracked[kEnd] = res.end as Method;
    tracked.write = write as never;
    tracked.end = end as never;
    res.on('finish', finish);
    res.on('close', finish);
    stamp(tracked, ctx);
    (req as Request & { log: unknown }).log = requestLogger(ctx);
    instrumentStack(routerStack(req.app));
    requestStore.run(ctx, next);
  };
}

export function setDebugHeaders(res: ServerResponse, req: Request, token: string): void {
  try {
    res.setHeader('X-Debug-Token', token);
    res.setHeader('X-Debug-Token-Link', `${req.protocol}://${req.get('host') ?? 'localhost'}/_profiler/${token}`);
  } catch {
    // A Host header Node refuses to echo back: the token alone still identifies the profile.
  }
}
