import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express';
import { buildProfile } from './collectors/build.js';
import { resolveOptions, type ProfilerOptions, type ResolvedOptions } from './options.js';
import type { RequestContext } from './recording/context.js';
import { captureConsole, logger } from './recording/logger.js';
import { recorder } from './recording/recorder.js';
import { errorHandler } from './errors/error-handler.js';
import { notFound } from './errors/not-found.js';
import { tokenSource } from './recording/token.js';
import { WriteQueue } from './storage/queue.js';
import { profilerPages } from './web/profiler-pages.js';
import { withToolbar } from './web/toolbar.js';
import type { ProfileStore } from './storage/store.js';

export interface WebProfiler extends RequestHandler {
  /** Mount after the app's routes: answers requests no route took. */
  notFound: RequestHandler;
  /** Mount last: records the error and renders the debug exception page. */
  errorHandler: ErrorRequestHandler;
  readonly options: ResolvedOptions;
  /** The SQLite store, or undefined while it cannot be opened (or the profiler is off). */
  store(): ProfileStore | undefined;
  /** Write waiting profiles now (tests, shutdown). Returns how many were written. */
  flush(): number;
  /** Flush and close the store. */
  close(): void;
}

/** Read from req.url, not req.path: this runs on every request and parsing the URL is not free. */
const isProfilerPath = (url: string) =>
  url.startsWith('/_') && /^\/(_profiler(\/|\?|$)|_wdt\/)/.test(url);

export function webProfiler(userOptions: ProfilerOptions = {}): WebProfiler {
  const options = resolveOptions(userOptions);
  const queue = options.enabled
    ? new WriteQueue<RequestContext>(options, (ctx) => ctx.token, (ctx) => buildProfile(ctx, options.collectors, options))
    : undefined;

  let record: RequestHandler | undefined;
  if (queue) {
    captureConsole();
    record = recorder({
      debug: options.debug,
      bodyLimit: options.bodyLimit,
      nextToken: tokenSource(options.tokenLength, (t) => queue.inUse(t)),
      done: (ctx) => queue.push(ctx),
      inject: options.debug ? withToolbar : undefined,
    });
  }
  const pages = queue
    ? profilerPages({
      options,
      store: () => {
        queue.flush();
        return queue.open();
      },
    })
    : undefined;

  const middleware = function webProfilerMiddleware(req: Request, res: Response, next: NextFunction) {
    if (record && pages) {
      if (isProfilerPath(req.url)) return pages(req, res);
      return record(req, res, next);
    }
    // App code calls req.log whether or not the profiler records: it must exist and cost nothing.
    req.log = logger;
    if (options.debug) res.setHeader('X-Robots-Tag', 'noindex');
    next();
  } as WebProfiler;

  return Object.assign(middleware, {
    notFound: notFound(),
    errorHandler: errorHandler(options),
    options,
    store: () => queue?.open(),
    flush: () => queue?.flush() ?? 0,
    close: () => queue?.close(),
  });
}
