import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { failedTemplates } from '../errors/template.js';
import type { WorkContext } from '../recording/context.js';
import { requestOf } from '../recording/inside.js';
import { renderEnded, renderStarted, type RenderEntry } from '../recording/renders.js';

interface View {
  name: string;
  path: string;
  ext: string;
  engine: unknown;
}
type Render = (this: View, options: Record<string, unknown>, callback: (err: unknown, html?: unknown) => unknown) => unknown;

const hooked = new WeakSet<object>();
const requireCache = createRequire(__filename).cache;

/** What Express adds to every view's locals: not the app's. */
const OWN_LOCALS = new Set(['settings', '_locals', 'cache']);

/**
 * Every template an app renders, whatever its engine: Express renders each through its view
 * class's render() (the `view` setting, Express's own unless the app gives another), timed from
 * the call to the engine's callback. A render error is noted with its template, for the exception
 * page (errors/template.ts).
 */
export function recordViews(app: unknown): void {
  let View: unknown;
  try {
    View = (app as { get?: (name: string) => unknown })?.get?.('view');
  } catch {
    return;
  }
  hookPartials();
  const proto = (View as { prototype?: Record<string, unknown> } | undefined)?.prototype;
  if (proto === undefined || typeof proto.render !== 'function' || hooked.has(proto)) return;
  hooked.add(proto);
  const render = proto.render as Render;
  proto.render = function (this: View, options: Record<string, unknown>, callback: (err: unknown, html?: unknown) => unknown) {
    const ctx = requestOf();
    const engine = ctx && engineOf(this);
    const entry = ctx && renderStarted(ctx, String(this.name), String(this.path), engine!, localsOf(options));
    if (entry === undefined) return render.call(this, options, callback);
    const layout = engine === 'hbs' ? hbsLayout(ctx!, this, options) : undefined;
    const done = (err: unknown) => {
      layout?.(err);
      renderEnded(ctx!, entry, err);
      if (err !== null && typeof err === 'object' && !failedTemplates.has(err)) failedTemplates.set(err, { name: String(this.name), file: String(this.path), line: lineOf(err) });
    };
    try {
      return render.call(this, options, function (this: unknown, err: unknown, ...rest: unknown[]) {
        done(err);
        return callback.call(this, err, ...rest);
      });
    } catch (err) {
      done(err);
      throw err;
    }
  };
}

/** Each layout file hbs would look for, by where it looks: whether it is there, read once. */
const layoutFiles = new Map<string, boolean>();

/**
 * hbs renders the page, then its layout (`layout` in the locals, else the `view options`
 * setting's, else `layout`, beside the views with the page's extension) with the page's HTML as
 * `body`, which it sets on the locals Express handed it just before: that assignment starts the
 * layout's render, on the views panel inside the page's. The locals keep a plain `body` again
 * once the render is over. Returns what ends it.
 */
function hbsLayout(ctx: WorkContext, view: View, options: Record<string, unknown>): ((err: unknown) => void) | undefined {
  try {
    const settings = options.settings as Record<string, unknown> | undefined;
    const given = options.layout !== undefined ? options.layout : (settings?.['view options'] as { layout?: unknown } | undefined)?.layout;
    if (given !== undefined && !given) return undefined;
    const ext = path.extname(String(view.path));
    const file = [settings?.views].flat().filter((dir): dir is string => typeof dir === 'string').map((dir) => {
      const candidate = path.join(dir, String(given || 'layout'));
      return path.extname(candidate) ? candidate : candidate + ext;
    }).find((candidate) => {
      let there = layoutFiles.get(candidate);
      if (there === undefined) layoutFiles.set(candidate, (there = existsSync(candidate)));
      return there;
    });
    const own = Object.getOwnPropertyDescriptor(options, 'body');
    if (file === undefined || (own !== undefined && !own.configurable)) return undefined;
    let body = own?.value;
    let entry: RenderEntry | undefined;
    Object.defineProperty(options, 'body', {
      configurable: true,
      enumerable: own?.enumerable ?? true,
      get: () => body,
      set(value: unknown) {
        body = value;
        entry ??= renderStarted(ctx, path.basename(file), file, 'hbs', {});
      },
    });
    return (err) => {
      renderEnded(ctx, entry, err);
      Object.defineProperty(options, 'body', { value: body, writable: true, enumerable: own?.enumerable ?? true, configurable: true });
    };
  } catch {
    return undefined;
  }
}

/**
 * handlebars' partials (`{{> card}}`), each a render of its own inside the one that includes it:
 * every environment calls the runtime module's invokePartial as a property of it.
 */
function hookPartials(): void {
  for (const [file, mod] of Object.entries(requireCache)) {
    if (!HANDLEBARS_RUNTIME.test(file)) continue;
    const runtime = mod?.exports as { invokePartial?: (this: unknown, partial: unknown, context: unknown, options?: { name?: unknown }) => unknown } | undefined;
    const invoke = runtime?.invokePartial;
    if (typeof invoke !== 'function' || hooked.has(invoke)) continue;
    const watched = function (this: unknown, partial: unknown, context: unknown, options?: { name?: unknown }) {
      const ctx = requestOf();
      const entry = ctx && renderStarted(ctx, String(options?.name ?? 'partial'), '', 'handlebars partial', {});
      if (entry === undefined) return invoke.call(this, partial, context, options);
      try {
        const html = invoke.call(this, partial, context, options);
        renderEnded(ctx!, entry, undefined);
        return html;
      } catch (err) {
        renderEnded(ctx!, entry, err);
        throw err;
      }
    };
    hooked.add(watched);
    runtime!.invokePartial = watched;
  }
}

const HANDLEBARS_RUNTIME = /[\\/]node_modules[\\/]handlebars[\\/]dist[\\/]cjs[\\/]handlebars[\\/]runtime\.js$/;

/** The app's locals, without what Express adds to every view. */
const localsOf = (options: unknown): Record<string, unknown> => {
  const own: Record<string, unknown> = {};
  try {
    for (const key of Object.keys(options ?? {})) if (!OWN_LOCALS.has(key)) own[key] = (options as Record<string, unknown>)[key];
  } catch {
    // Locals that cannot be read are left out.
  }
  return own;
};

const engines = new WeakMap<object, string>();

/** A package's folder in a module's path: its name, or undefined for the app's own files. */
const PACKAGE = /[\\/]node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)[\\/](?!.*[\\/]node_modules[\\/])/;

/**
 * The package whose export is the view's engine (Express requires `<ext>.__express`; apps register
 * `renderFile`s), else the extension. Only packages' modules are looked at, never the app's own (a
 * config module may be a Proxy that throws on any name it does not know), and only through their
 * own data properties: no getter runs, and a module that cannot be read is passed over.
 */
function engineOf(view: View): string {
  const engine = view.engine;
  if (typeof engine !== 'function') return view.ext.replace(/^\./, '');
  let name = engines.get(engine);
  if (name === undefined) {
    name = view.ext.replace(/^\./, '');
    for (const [file, mod] of Object.entries(requireCache)) {
      const pkg = PACKAGE.exec(file)?.[1];
      if (pkg === undefined || !exportsEngine(mod?.exports, engine)) continue;
      name = pkg.replace(/\\/g, '/');
      break;
    }
    engines.set(engine, name);
  }
  return name;
}

function exportsEngine(exports: unknown, engine: unknown): boolean {
  if (exports === engine) return true;
  if (exports === null || (typeof exports !== 'object' && typeof exports !== 'function')) return false;
  try {
    return Object.getOwnPropertyDescriptor(exports, '__express')?.value === engine || Object.getOwnPropertyDescriptor(exports, 'renderFile')?.value === engine;
  } catch {
    return false;
  }
}

/** The template's line, where the engine says: pug's `line`, ejs' `file:line` heading, "line N" in a parser's message (handlebars, eta). */
function lineOf(err: object): number | undefined {
  const line = (err as { line?: unknown }).line;
  if (typeof line === 'number' && line > 0) return line;
  const message = String((err as { message?: unknown }).message ?? '');
  const found = /^[^\n]*:(\d+)\n/.exec(message) ?? /\bline (\d+)/i.exec(message);
  return found ? Number(found[1]) : undefined;
}
