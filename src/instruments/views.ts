import { createRequire } from 'node:module';
import { failedTemplates } from '../errors/template.js';
import { requestOf } from '../recording/inside.js';
import { renderEnded, renderStarted } from '../recording/renders.js';

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
  const proto = (View as { prototype?: Record<string, unknown> } | undefined)?.prototype;
  if (proto === undefined || typeof proto.render !== 'function' || hooked.has(proto)) return;
  hooked.add(proto);
  const render = proto.render as Render;
  proto.render = function (this: View, options: Record<string, unknown>, callback: (err: unknown, html?: unknown) => unknown) {
    const ctx = requestOf();
    const entry = ctx && renderStarted(ctx, String(this.name), String(this.path), engineOf(this), localsOf(options));
    if (entry === undefined) return render.call(this, options, callback);
    const done = (err: unknown) => {
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
