import dc from 'node:diagnostics_channel';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import vm from 'node:vm';
import { contextOf, enter, leave, type RequestContext, type Span } from './context.js';
import { ranFor } from './loop.js';
import { stackOf } from './caller.js';
import { hookMounts } from './mounts.js';
import { layerNamed } from './checks.js';

/** The part of an Express 4 or 5 router layer that we read. */
export interface RouterLayer {
  handle: (...args: any[]) => unknown;
  name?: string;
  route?: { path: string | string[]; methods?: Record<string, boolean>; stack: RouterLayer[] };
  method?: string;
  regexp?: RegExp;
  /** Express 5's router: the path the layer was declared with. */
  rawPath?: unknown;
  /** Express 4 returns a boolean, Express 5's router a match object. */
  match?: (path: string) => unknown;
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

const hooked = new WeakSet<object>();

type Next = (err?: unknown) => void;
type Handler = (...args: unknown[]) => unknown;

/** The channels router ≥ 2.3 publishes on: with a subscriber it takes another path, which is left to it. */
const routerTracing = dc.tracingChannel?.('express.router.request');
const routerTraced = () =>
  routerTracing !== undefined && (routerTracing.start.hasSubscribers || routerTracing.end.hasSubscribers ||
    routerTracing.asyncStart.hasSubscribers || routerTracing.asyncEnd.hasSubscribers || routerTracing.error.hasSubscribers);

const isPromise = (value: unknown): value is PromiseLike<unknown> =>
  value !== null && (typeof value === 'object' || typeof value === 'function') && typeof (value as { then?: unknown }).then === 'function';

/**
 * Every layer of every router (nested routers and sub-apps included) is entered through its
 * prototype's handleRequest / handleError (handle_request / handle_error in Express 4). Those are
 * replaced, once, by functions that do exactly what the router's own do (checked against their
 * source) plus one push of the layer and the time it was entered. Replaced, not wrapped: a wrapper
 * would add a frame to every stack for every layer, and with V8's limit of 10 frames the app's own
 * frames would fall off its traces. The replacement is compiled under the router's file name, with
 * its call of the handler at the very line and column of the router's own (placed), so the frame
 * it leaves in a stack reads as the router's: an app that prints its stacks (Express's own error
 * page in development) answers byte for byte as bare. The layer's synchronous code runs as its
 * request's (enter/leave), for the exported logger; errors thrown or rejected there are noted for
 * the profile.
 */
export function hookLayers(app: unknown): void {
  hookDone(app);
  const first = routerStack(app)?.[0];
  if (first) hookLayerClass(Object.getPrototypeOf(first) as Record<string, unknown> | null);
}

function hookLayerClass(proto: Record<string, unknown> | null): void {
  if (!proto || hooked.has(proto)) return;
  hooked.add(proto);
  const modern = typeof proto.handleRequest === 'function';
  const [request, error] = modern ? ['handleRequest', 'handleError'] : ['handle_request', 'handle_error'];
  const originalRequest = proto[request] as Handler | undefined;
  const originalError = proto[error] as Handler | undefined;
  if (typeof originalRequest !== 'function' || typeof originalError !== 'function') return;
  const known = modern
    ? /fn\.length > 3/.test(String(originalRequest)) && /Rejected promise/.test(String(originalRequest)) && /fn\.length !== 4/.test(String(originalError))
    : /fn\.length > 3/.test(String(originalRequest)) && /fn\(req, res, next\)/.test(String(originalRequest)) && /fn\(error, req, res, next\)/.test(String(originalError));
  // A router this code does not know keeps its own methods, wrapped: one frame more per layer, but its behaviour.
  const traced = modern && /shouldTrace/.test(String(originalRequest)) ? routerTraced : () => !known;
  const helpers: LayerHelpers = { contextOf, noteError, begin, end, traced, settle: modern && known ? settlePromise : () => {}, viaOriginal, now: () => performance.now() };
  // The router's place is found by calling its method once: not while something traces its calls (it would see the stand-in).
  const placing = known && !traced();
  proto[request] = (placing && placed(originalRequest, proto, false, helpers)) || wrapped(originalRequest, false);
  proto[error] = (placing && placed(originalError, proto, true, helpers)) || wrapped(originalError, true);
}

interface LayerHelpers {
  contextOf: typeof contextOf;
  noteError: typeof noteError;
  begin: typeof begin;
  end: typeof end;
  traced: () => boolean;
  settle: (ret: unknown, next: Next, ctx: RequestContext | undefined) => void;
  viaOriginal: typeof viaOriginal;
  now: () => number;
}

/** A layer entered: its place on the trail, the route it may be, and the request's context made current. */
function begin(ctx: RequestContext, layer: RouterLayer, req: unknown, res: unknown, now: number, handlesError: boolean): RequestContext | undefined {
  if (Object.getPrototypeOf(res) !== ctx.proto) ctx.recorder.adopt(req, res, ctx);
  ctx.trail.push(layer, now - ctx.start);
  if (!handlesError) entered(ctx, layer, req as { baseUrl?: string; params?: unknown });
  if (layer.name === 'compression') ctx.recorder.beforeCompression(res, ctx);
  return enter(ctx);
}

function end(ctx: RequestContext, outer: RequestContext | undefined, now: number): void {
  leave(outer);
  // The request's synchronous run began in its outermost layer: timed whole, to find what held the loop.
  if (outer !== ctx) ranFor(ctx, now);
}

/**
 * The router's method, as source: the router's own steps, the hook's around them. `fn(` stands
 * alone on its line, after `pad`, so that it can be put at the router's line and column.
 */
function layerSource(name: string, handlesError: boolean, pad: string): string[] {
  const args = handlesError ? 'err, req, res, next' : 'req, res, next';
  return [
    '(function (h, original) {',
    `return function ${name}(${args}) {`,
    '  const fn = this.handle;',
    '  const ctx = h.contextOf(res);',
    handlesError ? '  if (ctx !== undefined && err) h.noteError(ctx, err);\n  if (fn.length !== 4) return next(err);' : '  if (fn.length > 3) return next();',
    `  if (h.traced()) return h.viaOriginal(original, this, ctx, [${args}]);`,
    '  let outer, now = 0;',
    `  if (ctx !== undefined) outer = h.begin(ctx, this, req, res, (now = h.now()), ${handlesError});`,
    '  try {',
    '    h.settle(',
    `${pad}fn(${args}), next, ctx);`,
    '  } catch (thrown) {',
    '    if (ctx !== undefined) h.noteError(ctx, thrown);',
    '    next(thrown);',
    '  } finally {',
    '    if (ctx !== undefined) h.end(ctx, outer, now);',
    '  }',
    '};',
    '})',
  ].join('\n').split('\n');
}

/** The router's method replaced, placed where its own calls the handler; undefined where that place cannot be found. */
function placed(original: Handler, proto: object, handlesError: boolean, helpers: LayerHelpers): Handler | undefined {
  const site = callSite(original, proto, handlesError);
  if (site === undefined || !/^[A-Za-z_$][\w$]*$/.test(original.name)) return undefined;
  const lines = layerSource(original.name, handlesError, ' '.repeat(site.column - 1));
  const at = lines.findIndex((line) => /^ *fn\(/.test(line));
  try {
    const make = new vm.Script(lines.join('\n'), { filename: site.file, lineOffset: site.line - 1 - at }).runInThisContext() as (h: LayerHelpers, original: Handler) => Handler;
    return make(helpers, original);
  } catch {
    // Code generation refused (a policy, --disallow-code-generation-from-strings): the wrapper does.
    return undefined;
  }
}

/** The router's own method behind one frame of the hook's: for routers of a shape not known here. */
function wrapped(original: Handler, handlesError: boolean): Handler {
  return {
    [original.name](this: RouterLayer, ...args: unknown[]) {
      const ctx = contextOf(args[handlesError ? 2 : 1]);
      if (ctx !== undefined && handlesError && args[0]) noteError(ctx, args[0]);
      // A layer the router passes over (an error handler without an error, or the reverse) is not entered.
      if ((this.handle.length === 4) !== handlesError) return original.apply(this, args);
      return viaOriginal(original, this, ctx, args);
    },
  }[original.name] as Handler;
}

/**
 * Where the router's method calls the layer's handler, as V8 names it in a stack: found by calling
 * it once on a stand-in layer whose handler reads its caller. Undefined if the call is not the
 * method's own (a router that traces its handlers calls them from a closure).
 */
function callSite(original: Handler, proto: object, handlesError: boolean): { file: string; line: number; column: number } | undefined {
  let site: NodeJS.CallSite | undefined;
  const handle = handlesError
    ? function (_e: unknown, _q: unknown, _s: unknown, _n: unknown) { site = stackOf(1, handle)[0]; }
    : function (_q: unknown, _s: unknown, _n: unknown) { site = stackOf(1, handle)[0]; };
  const stand = Object.create(proto) as RouterLayer;
  Object.defineProperty(stand, 'handle', { value: handle });
  try {
    original.apply(stand, handlesError ? [new Error('probe'), {}, {}, () => {}] : [{}, {}, () => {}]);
  } catch {
    return undefined;
  }
  const file = site?.getFileName();
  const line = site?.getLineNumber();
  const column = site?.getColumnNumber();
  if (site?.getFunctionName() !== original.name || !file || !line || !column) return undefined;
  return { file, line, column };
}

/** Express 5's router: a handler's promise that rejects hands its reason to next. */
function settlePromise(ret: unknown, next: Next, ctx: RequestContext | undefined): void {
  if (!isPromise(ret)) return;
  ret.then(undefined, (error: unknown) => {
    if (ctx !== undefined) noteError(ctx, error);
    next(error || new Error('Rejected promise'));
  });
}

/** The router's own method, timed: where it traces its handlers itself, or is of a shape not known here. */
function viaOriginal(original: Handler, layer: RouterLayer, ctx: RequestContext | undefined, args: unknown[]): unknown {
  if (ctx === undefined) return original.apply(layer, args);
  ctx.trail.push(layer, performance.now() - ctx.start);
  if (args.length === 3) entered(ctx, layer, args[0] as { baseUrl?: string; params?: unknown });
  const outer = enter(ctx);
  try {
    return original.apply(layer, args);
  } finally {
    leave(outer);
  }
}

const noteError = (ctx: RequestContext, err: unknown) => {
  if (ctx.error !== undefined || err === 'route' || err === 'router') return;
  ctx.error = err;
  // The layer that passed it on (a body parser, a CSRF check): where the app mounted what refused.
  ctx.answeredBy = layerNamed(ctx);
};

/**
 * The route that answers: set when a route is entered (with its params, which the router takes
 * back as it unwinds), cleared when any layer but the route's own handlers comes after it.
 */
function entered(ctx: RequestContext, layer: RouterLayer, req: { baseUrl?: string; params?: unknown }): void {
  if (layer.route !== undefined) {
    const path = Array.isArray(layer.route.path) ? layer.route.path.join(', ') : String(layer.route.path);
    ctx.route = (req.baseUrl ?? '') + path;
    ctx.routeLayers = layer.route.stack;
    ctx.params = req.params;
  } else if (ctx.route !== undefined && !ctx.routeLayers?.includes(layer)) {
    ctx.route = undefined;
    ctx.params = undefined;
  }
}

/**
 * What reaches the end of the app's router: an error no handler took (Express's final handler
 * answers it), or nothing, when every route passed on. Only the app's own router needs this: an
 * error in a nested router or a sub-app ends up there. The hook goes on its instance, as its own
 * `handle`, when the recorder first sees the app (the app's first request is then under way) or,
 * for routers whose code is in the require cache, on their class before any request
 * (hookLoadedRouters), so that the first request is seen too.
 */
function hookDone(app: unknown): void {
  const router = appRouter(app) as { handle?: Handler } | undefined;
  if (!router || typeof router.handle !== 'function' || Object.prototype.hasOwnProperty.call(router, 'handle')) return;
  router.handle = endSeen(router.handle);
}

/** An app's own router: app._router in Express 4, app.router in Express 5 (whose getter Express 4 makes throw). */
function appRouter(app: unknown): unknown {
  const a = app as { router?: unknown; _router?: unknown } | undefined;
  if (!a) return undefined;
  try {
    return '_router' in a ? a._router : a.router;
  } catch {
    return undefined;
  }
}

/**
 * Sub-apps, by the closure Express mounts each with (`mounted_app`, which hides the app): learnt
 * when a recorded request first goes into one, so that notFound and the routing panel can read
 * their routes as they read a Router's.
 */
const mountedRouters = new WeakMap<object, unknown>();

export const mountedRouter = (handle: unknown): unknown => (typeof handle === 'function' ? mountedRouters.get(handle) : undefined);

function endSeen(original: Handler): Handler {
  return function handle(this: unknown, req: unknown, res: unknown, callback: unknown) {
    if (typeof callback !== 'function' || contextOf(res) !== undefined) return original.call(this, req, res, callback);
    return original.call(this, req, res, atEnd(res, callback as Handler));
  };
}

/** The app router's final callback, noting for the request's profile what reaches it: an error no handler took, or no route answering. */
export function atEnd(res: unknown, callback: Handler): Handler {
  return function done(this: unknown, err: unknown) {
    const ctx = contextOf(res);
    if (ctx !== undefined) {
      if (err) noteError(ctx, err);
      else ctx.route = undefined;
    }
    // eslint-disable-next-line prefer-rest-params
    return callback.apply(this, arguments as unknown as unknown[]);
  };
}

const requireCache = createRequire(__filename).cache;
const ROUTER_FILE = /[\\/]node_modules[\\/](router[\\/]index|[^\\/]+[\\/]lib[\\/]router[\\/]index)\.js$/;
const hookedRouters = new WeakSet<object>();
/** router 2 (Express 5) keeps its layer in lib/, beside index.js's directory; Express 4 beside index.js. */
const modern = (routerIndex: string) => /[\\/]router[\\/]index\.js$/.test(routerIndex) && !/[\\/]lib[\\/]router[\\/]index\.js$/.test(routerIndex);

/**
 * The router classes of Express 4 and 5 that are loaded already: each router's first call decides
 * its own `handle` for good: the end hook when it is the router of the app handling the request
 * (no request recorded yet), its original when it is nested in one (a sub-app's router is learnt
 * then, see mountedRouters). That first call alone has a frame of the hook's in its stacks.
 */
export function hookLoadedRouters(): void {
  for (const [file, mod] of Object.entries(requireCache)) {
    if (!ROUTER_FILE.test(file)) continue;
    // Express 4's router module is its routers' prototype; router 2's is a class.
    const exported = mod?.exports as { handle?: unknown; prototype?: unknown } | undefined;
    const proto = (typeof exported?.handle === 'function' ? exported : exported?.prototype) as Record<string, unknown> | undefined;
    if (!proto || hookedRouters.has(proto) || typeof proto.handle !== 'function' || typeof proto.use !== 'function' || typeof proto.route !== 'function') continue;
    hookedRouters.add(proto);
    // Its layers too, before the first request runs through them (a method replaced under a running one would read otherwise in that request's stacks).
    const layer: unknown = requireCache[path.join(file, modern(file) ? '../lib/layer.js' : '../layer.js')]?.exports;
    if (typeof layer === 'function') hookLayerClass(layer.prototype as Record<string, unknown> | null);
    const route: unknown = requireCache[path.join(file, modern(file) ? '../lib/route.js' : '../route.js')]?.exports;
    hookMounts(proto, typeof route === 'function' ? (route.prototype as Record<string, unknown>) : undefined);
    const original = proto.handle as Handler;
    proto.handle = function handle(this: object, req: unknown, res: unknown, callback: unknown) {
      // Express 5 has set req.app by now (a mounted sub-app has a parent); Express 4 sets it in the router's first layer.
      const app = (req as { app?: { parent?: unknown } } | undefined)?.app;
      const top = typeof callback === 'function' && contextOf(res) === undefined && (app === undefined || (appRouter(app) === this && app.parent === undefined));
      if (!top) learnMount(this, res);
      const own = top ? endSeen(original) : original;
      Object.defineProperty(this, 'handle', { value: own, writable: true, configurable: true });
      return own.call(this, req, res, callback);
    };
  }
}

/** A router entered from a sub-app's mount, the last layer its request entered: the mount leads to it. */
function learnMount(router: object, res: unknown): void {
  const trail = contextOf(res)?.trail;
  const layer = trail?.[trail.length - 2] as RouterLayer | undefined;
  if (layer?.handle?.name === 'mounted_app') mountedRouters.set(layer.handle, router);
}

const round = (ms: number) => Math.round(ms * 1000) / 1000;

/**
 * The trail of (layer, entered at) pairs with each layer replaced, in place, by its kind and name
 * ("route\troute GET /hello"): plain strings that can cross to the writer thread.
 */
export function describeTrail(trail: unknown[]): unknown[] {
  for (let i = 0; i < trail.length; i += 2) trail[i] = describe(trail[i] as RouterLayer);
  return trail;
}

/** A described trail as spans: each runs until the next layer is entered, the last until the end. */
export function spansOf(trail: unknown[], end: number): Span[] {
  const spans: Span[] = [];
  for (let i = 0; i < trail.length; i += 2) {
    const described = trail[i] as string;
    const tab = described.indexOf('\t');
    const start = trail[i + 1] as number;
    const next = i + 3 < trail.length ? (trail[i + 3] as number) : end;
    spans.push({ name: described.slice(tab + 1), kind: described.slice(0, tab) as Span['kind'], start: round(start), end: round(Math.max(next, start)) });
  }
  return spans;
}

/** Layers outlive requests: their names are worked out once each. */
const described = new WeakMap<RouterLayer, string>();

function describe(layer: RouterLayer): string {
  let d = described.get(layer);
  if (d === undefined) {
    const { kind, name } = describeOnce(layer);
    described.set(layer, (d = `${kind}\t${name}`));
  }
  return d;
}

/**
 * The names async-error wrappers give what they return (express-async-handler's asyncUtilWrap,
 * the asyncHandler and catchAsync helpers apps write): a handler so named is the wrapped one,
 * whose name the wrapper hides; it is named by its route instead, as an anonymous one is.
 */
const WRAPPER = /^(async(Util)?Wrap(per)?|async(Handler|Middleware|Route|Fn)|catch(Async|Errors?)|wrap(ped|per|Async)?|tryCatch|handler|middleware)$/i;

const nameOf = (layer: RouterLayer, fallback: string) => {
  const name = layer.name?.replace(/^(bound )+/, '');
  return name && name !== '<anonymous>' && !WRAPPER.test(name) ? name : fallback;
};

function describeOnce(layer: RouterLayer): Pick<Span, 'name' | 'kind'> {
  if (layer.route) {
    const path = Array.isArray(layer.route.path) ? layer.route.path.join(', ') : layer.route.path;
    const methods = Object.keys(layer.route.methods ?? {}).filter((m) => m !== '_all').map((m) => m.toUpperCase());
    return { name: `route ${methods.join('|') || 'ALL'} ${path}`, kind: 'route' };
  }
  if (layer.handle.length === 4) return { name: nameOf(layer, 'error handler'), kind: 'error' };
  // Layers inside a route carry the method they answer.
  if (layer.method !== undefined) return { name: nameOf(layer, 'handler'), kind: 'handler' };
  return { name: nameOf(layer, 'middleware'), kind: 'middleware' };
}
