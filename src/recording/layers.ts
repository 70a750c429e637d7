import { performance } from 'node:perf_hooks';
import { contextOf, currentContext, type RequestContext, type Span } from './context.js';

/** The part of an Express 4 or 5 router layer that we read. */
export interface RouterLayer {
  handle: (...args: any[]) => unknown;
  name?: string;
  route?: { path: string | string[]; methods?: Record<string, boolean>; stack: RouterLayer[] };
  method?: string;
  regexp?: RegExp;
  match?: (path: string) => boolean;
}

/** The app's top-level layer stack: app.router in Express 5, app._router in Express 4. */
export function routerStack(app: unknown): RouterLayer[] | undefined {
  const a = app as { router?: { stack?: RouterLayer[] }; _router?: { stack?: RouterLayer[] } };
  // Express 4 defines no `router` getter but throws on reading it; `_router` comes first for that reason.
  if (a && '_router' in a) return a._router?.stack;
  try {
    return a?.router?.stack;
  } catch {
    return undefined;
  }
}

const wrapped = new WeakSet<object>();
const instrumentedStacks = new WeakMap<object, number>();

/**
 * Wrap every layer's handle so that each call becomes a Span of the running request. Done once per
 * stack (and again only if the stack grew), never per request. A wrapper keeps the arity of what it
 * wraps: Express tells error handlers (4 arguments) from middleware by fn.length.
 */
export function instrumentStack(stack: RouterLayer[] | undefined): void {
  if (!stack || instrumentedStacks.get(stack) === stack.length) return;
  instrumentedStacks.set(stack, stack.length);
  for (const layer of stack) {
    catchErrors(Object.getPrototypeOf(layer));
    if (layer.route) {
      const path = Array.isArray(layer.route.path) ? layer.route.path.join(', ') : layer.route.path;
      const methods = Object.keys(layer.route.methods ?? {}).filter((m) => m !== '_all').map((m) => m.toUpperCase());
      wrapLayer(layer, `route ${methods.join('|') || 'ALL'} ${path}`, 'route');
      for (const inner of layer.route.stack) wrapLayer(inner, inner.name && inner.name !== '<anonymous>' ? inner.name : 'handler', 'handler');
    } else {
      const inner = (layer.handle as { stack?: RouterLayer[] }).stack;
      if (Array.isArray(inner)) instrumentStack(inner);
      wrapLayer(layer, layer.name && layer.name !== '<anonymous>' ? layer.name : 'middleware', 'middleware');
    }
  }
}

const errorCatching = new WeakSet<object>();

/**
 * Every error on its way through any router, nested or called by hand, passes a layer's
 * handleError (Express 5) or handle_error (Express 4): the first one seen is the request's
 * exception, even when an app's own error middleware answers and it never reaches ours.
 */
function catchErrors(proto: Record<string, unknown> | null): void {
  if (!proto || errorCatching.has(proto)) return;
  errorCatching.add(proto);
  for (const name of ['handleError', 'handle_error']) {
    const original = proto[name];
    if (typeof original !== 'function') continue;
    proto[name] = function (this: unknown, error: unknown, req: unknown, res: unknown, next: unknown) {
      const ctx = contextOf(res);
      if (ctx && ctx.error === undefined && error) ctx.error = error;
      return original.call(this, error, req, res, next);
    };
  }
}

function wrapLayer(layer: RouterLayer, name: string, kind: Span['kind']): void {
  const fn = layer.handle;
  if (wrapped.has(fn)) return;
  let wrapper: (...args: any[]) => unknown;
  if (fn.length === 4) {
    wrapper = function (this: unknown, err: unknown, req: unknown, res: unknown, next: (e?: unknown) => void) {
      const ctx = currentContext();
      if (!ctx) return fn.call(this, err, req, res, next);
      const span = open(ctx, name, 'error');
      return settle(ctx, span, () => fn.call(this, err, req, res, closeOnNext(ctx, span, next)));
    };
  } else {
    wrapper = function (this: unknown, req: unknown, res: unknown, next: (e?: unknown) => void) {
      const ctx = currentContext();
      if (!ctx) return fn.call(this, req, res, next);
      const span = open(ctx, name, kind);
      return settle(ctx, span, () => fn.call(this, req, res, closeOnNext(ctx, span, next)));
    };
  }
  // Routers are functions with properties (stack, params...) that Express reads back.
  Object.assign(wrapper, fn);
  Object.defineProperty(wrapper, 'name', { value: fn.name });
  wrapped.add(wrapper);
  layer.handle = wrapper;
}

function open(ctx: RequestContext, name: string, kind: Span['kind']): Span {
  const span: Span = { name, kind, start: performance.now() - ctx.start, end: -1 };
  ctx.spans.push(span);
  return span;
}

/**
 * A handler that throws, or whose promise rejects, ends there: Express catches it and calls the
 * router's own next, not the one we handed in.
 */
function settle(ctx: RequestContext, span: Span, call: () => unknown): unknown {
  const end = () => {
    if (span.end < 0) span.end = performance.now() - ctx.start;
  };
  try {
    const result = call();
    if (result && typeof (result as Promise<unknown>).then === 'function') (result as Promise<unknown>).then(undefined, end);
    return result;
  } catch (err) {
    end();
    throw err;
  }
}

/** A layer ends when it hands on; one that answers ends when the response does (see the recorder). */
function closeOnNext(ctx: RequestContext, span: Span, next: (e?: unknown) => void) {
  return function (this: unknown, err?: unknown) {
    span.end = performance.now() - ctx.start;
    if (err && err !== 'route' && err !== 'router' && ctx.error === undefined) ctx.error = err;
    return next.call(this, err);
  };
}
