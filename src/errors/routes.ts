import { routerStack, type RouterLayer } from '../recording/layers.js';

export interface RouteMatch {
  /** Path pattern as declared, with any mount path in front. */
  path: string;
  methods: string[];
  matches: boolean;
}

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
 * Every route of the app, with whether `path` matches it, mounted routers included. It asks the
 * layers themselves (layer.match), so it agrees with Express 4 and 5 on what a path means.
 */
export function routeTable(app: unknown, path: string): RouteMatch[] {
  const out: RouteMatch[] = [];
  walk(routerStack(app), path, '', out);
  return out;
}

function walk(stack: RouterLayer[] | undefined, path: string, prefix: string, out: RouteMatch[]): void {
  for (const layer of stack ?? []) {
    if (layer.route) {
      out.push({ path: prefix + patternOf(layer), methods: methodsOf(layer), matches: safeMatch(layer, path) });
      continue;
    }
    const inner = (layer.handle as { stack?: RouterLayer[] }).stack;
    if (!Array.isArray(inner)) continue;
    // A mounted router: match its prefix, then walk it with what is left of the path.
    const mounted = safeMatch(layer, path);
    const matchedPath = mounted ? String((layer as { path?: string }).path ?? '') : '';
    const mountLabel = mountPathOf(layer);
    walk(inner, mounted ? path.slice(matchedPath.length) || '/' : '\u0000', prefix + mountLabel, out);
  }
}

function mountPathOf(layer: RouterLayer): string {
  // Express 5 layers keep no source path; the regexp of Express 4 shows it. Neither is needed to match.
  const src = layer.regexp?.source;
  if (!src) return '';
  const m = /^\^\\\/(.*?)\\\/\?\(\?=\\\/\|\$\)/.exec(src);
  return m ? `/${m[1].replace(/\\\//g, '/')}` : '';
}

function safeMatch(layer: RouterLayer, path: string): boolean {
  try {
    return Boolean(layer.match?.(path));
  } catch {
    return false;
  }
}

/** The methods the app's routes accept for `path` (empty when no route matches it at all). */
export function allowedMethods(app: unknown, path: string): string[] {
  const methods = new Set<string>();
  for (const route of routeTable(app, path)) if (route.matches) route.methods.forEach((m) => methods.add(m));
  return [...methods];
}
