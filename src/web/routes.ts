import { mountedRouter, routerStack, type RouterLayer } from '../recording/layers.js';

export interface RouteMatch {
  /** Path pattern as declared, with any mount path in front. */
  path: string;
  methods: string[];
  matches: boolean;
}

/** A path no app declares: a route that matches it matches anything. */
const ANY_PATH = '/\u0000web-profiler/any/path';

const methodsOf = (layer: RouterLayer) => {
  const methods = Object.keys(layer.route?.methods ?? {}).filter((m) => m !== '_all').map((m) => m.toUpperCase());
  if (layer.route?.methods?._all) methods.push('*');
  if (methods.includes('GET') && !methods.includes('HEAD')) methods.push('HEAD');
  return methods;
};

const patternOf = (layer: RouterLayer) => {
  const p = layer.route!.path;
  return Array.isArray(p) ? p.join(', ') : String(p);
};

/**
 * Every route of the app, with whether `path` matches it, mounted routers and sub-apps included. It asks the
 * layers themselves (layer.match), so it agrees with Express 4 and 5 on what a path means.
 */
export function routeTable(app: unknown, path: string): RouteMatch[] {
  const out: RouteMatch[] = [];
  walk(routerStack(app), path, '', (layer, prefix, matches) => out.push({ path: prefix + patternOf(layer), methods: methodsOf(layer), matches }));
  return out;
}

type Visit = (route: RouterLayer, prefix: string, matches: boolean) => void;

function walk(stack: RouterLayer[] | undefined, path: string, prefix: string, visit: Visit): void {
  for (const layer of stack ?? []) {
    if (layer.route) {
      visit(layer, prefix, matchedPart(layer, path) !== undefined);
      continue;
    }
    // A mounted router (a Router, or a sub-app's: see mountedRouter): match its prefix, then walk it with what is left of the path.
    const inner = ((layer.handle as { stack?: RouterLayer[] }).stack ?? (mountedRouter(layer.handle) as { stack?: RouterLayer[] } | undefined)?.stack);
    if (!Array.isArray(inner)) continue;
    const matched = matchedPart(layer, path);
    walk(inner, matched === undefined ? '\u0000' : path.slice(matched.length) || '/', prefix + mountPathOf(layer), visit);
  }
}

/** Express 5's router keeps the path a layer was mounted at; Express 4's only shows it in its regexp. */
function mountPathOf(layer: RouterLayer): string {
  if (typeof layer.rawPath === 'string') return layer.rawPath === '/' ? '' : layer.rawPath;
  const m = /^\^\\\/(.*?)\\\/\?\(\?=\\\/\|\$\)/.exec(layer.regexp?.source ?? '');
  return m ? `/${m[1].replace(/\\\//g, '/')}` : '';
}

/**
 * The part of `path` a layer matches, or undefined. Express 5's router returns it from match();
 * Express 4's returns true and leaves it in layer.path.
 */
function matchedPart(layer: RouterLayer, path: string): string | undefined {
  try {
    const result = layer.match?.(path) as unknown;
    if (!result) return undefined;
    return String(typeof result === 'object' ? (result as { path?: unknown }).path ?? '' : (layer as { path?: unknown }).path ?? '');
  } catch {
    return undefined;
  }
}

/**
 * The methods the app's routes accept for `path` (empty when no route matches it at all). A route
 * that matches every path (`app.get('*')`, an SPA fallback) says nothing about this one: it would
 * make every other method a 405.
 */
export function allowedMethods(app: unknown, path: string): string[] {
  const methods = new Set<string>();
  walk(routerStack(app), path, '', (layer, _prefix, matches) => {
    if (matches && matchedPart(layer, ANY_PATH) === undefined) methodsOf(layer).forEach((m) => methods.add(m));
  });
  return [...methods];
}
