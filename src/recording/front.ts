import type { NextFunction, Request, Response } from 'express';
import { atEnd, type RouterLayer } from './layers.js';

type Middleware = (req: Request, res: Response, next: NextFunction) => void;
interface Router {
  stack: RouterLayer[];
  handle: (req: Request, res: Response, done: NextFunction) => void;
}
type Layer = RouterLayer & { slash?: boolean; regexp?: RegExp & { fast_slash?: boolean } };

const tried = new WeakSet<object>();

/**
 * The profiler's router layer costs every request a turn of the router's loop (match, params,
 * dispatch) for a function that always passes on. Where that layer is the app's first (after
 * Express 4's own query and expressInit) and unconditional (app.use(profiler), no path), the same
 * function runs in front of the router instead, and the layer leaves the stack. Anywhere else
 * (in a Router, under a path, after the app's own middleware) the layer stays as it is.
 *
 * The stack is replaced, not spliced: a request already inside the router walks the array it
 * started with by index, and must not skip a layer. Called on the layer's first request of an app.
 */
export function runInFront(app: unknown, layerFn: Middleware): void {
  // An Express app is a function.
  if (typeof app !== 'function' || tried.has(app)) return;
  tried.add(app);
  const express4 = '_router' in app;
  const router = (express4 ? (app as { _router?: Router })._router : (app as { router?: Router }).router) as Router | undefined;
  const stack = router?.stack;
  if (!Array.isArray(stack) || typeof router!.handle !== 'function') return;
  const at = stack.findIndex((layer) => layer.handle === layerFn);
  const layer = stack[at] as Layer | undefined;
  if (express4) {
    // query, expressInit, then ours: ours runs where expressInit passes on.
    const [query, init] = stack as Layer[];
    if (at !== 2 || query.name !== 'query' || init.name !== 'expressInit' || !layer?.regexp?.fast_slash || init.handle.length !== 3) return;
    const expressInit = init.handle;
    init.handle = function expressInitThenProfiler(req: Request, res: Response, next: NextFunction) {
      expressInit(req, res, () => {
        // expressInit kept its next as req.next, which res.sendFile calls with its error: the router's, not ours.
        req.next = next;
        layerFn(req, res, next);
      });
    };
  } else {
    if (at !== 0 || layer?.slash !== true) return;
    // The router's handle notes what reaches its end only for a request not yet recorded when it enters (see hookDone): here it is, so that is done here.
    const handle = router!.handle;
    router!.handle = function handleWithProfiler(this: Router, req: Request, res: Response, done: NextFunction) {
      // What the router's handle sets first; the recorder reads it.
      req.originalUrl = req.originalUrl || req.url;
      let passed = false;
      try {
        layerFn(req, res, () => {
          passed = true;
          handle.call(this, req, res, atEnd(res, done) as NextFunction);
        });
      } catch (err) {
        // The app's own code runs after `passed`: its errors are the router's, as ever. Ours cost the request its profile only.
        if (passed) throw err;
        handle.call(this, req, res, done);
      }
    };
  }
  router!.stack = stack.filter((l) => l !== layer);
}
