import { performance } from 'node:perf_hooks';
import { contextOf, enter, leave, type Span } from './context.js';

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

/**
 * Every layer of every router (nested routers and sub-apps included) is entered through its
 * prototype's handleRequest / handleError (handle_request / handle_error in Express 4). Hooking
 * those once makes the timeline cost one push per layer: the layer and the time it was entered.
 * The layer's synchronous code runs as its request's (enter/leave), for the exported logger.
 * Errors are caught there too, so one answered by an app's own error middleware still reaches
 * the profile.
 */
export function hookLayers(app: unknown): void {
  const first = routerStack(app)?.[0];
  const proto = first && (Object.getPrototypeOf(first) as Record<string, unknown> | null);
  if (!proto || hooked.has(proto)) return;
  hooked.add(proto);
  for (const name of ['handleRequest', 'handle_request']) {
    const original = proto[name];
    if (typeof original !== 'function') continue;
    // A computed method name: stack traces keep reading "Layer.handleRequest".
    proto[name] = {
      [name](this: RouterLayer, req: unknown, res: unknown, next: unknown) {
        const ctx = contextOf(res);
        if (ctx === undefined) return original.call(this, req, res, next);
        if (this.handle.length < 4) ctx.trail.push(this, performance.now() - ctx.start);
        const outer = enter(ctx);
        try {
          return original.call(this, req, res, next);
        } finally {
          leave(outer);
        }
      },
    }[name];
  }
  for (const name of ['handleError', 'handle_error']) {
    const original = proto[name];
    if (typeof original !== 'function') continue;
    proto[name] = {
      [name](this: RouterLayer, error: unknown, req: unknown, res: unknown, next: unknown) {
        const ctx = contextOf(res);
        if (ctx === undefined) return original.call(this, error, req, res, next);
        if (ctx.error === undefined && error) ctx.error = error;
        if (this.handle.length === 4) ctx.trail.push(this, performance.now() - ctx.start);
        const outer = enter(ctx);
        try {
          return original.call(this, error, req, res, next);
        } finally {
          leave(outer);
        }
      },
    }[name];
  }
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

const nameOf = (layer: RouterLayer, fallback: string) => (layer.name && layer.name !== '<anonymous>' ? layer.name : fallback);

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
