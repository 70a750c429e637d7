import { awaited, noteValidation, type FieldError } from '../recording/validations.js';
import type { DriverAdapter } from './driver.js';
import { ownerOf } from './driver.js';

type Compiled = ((this: unknown, ...args: unknown[]) => unknown) & { errors?: unknown; $async?: unknown };
type Compile = (this: unknown, ...args: unknown[]) => unknown;
type AjvError = { instancePath?: unknown; dataPath?: unknown; keyword?: unknown; message?: unknown; params?: { missingProperty?: unknown } };

/** A JSON pointer (`/items/0/sku`, ajv's instancePath) as a dotted path, with a missing property named. */
function fieldOf(e: AjvError): string {
  const pointer = typeof e.instancePath === 'string' ? e.instancePath : typeof e.dataPath === 'string' ? e.dataPath.replace(/^\./, '/') : '';
  const steps = pointer.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (typeof e.params?.missingProperty === 'string') steps.push(e.params.missingProperty);
  return steps.join('.');
}

function failed(errors: unknown): void {
  const list: FieldError[] = Array.isArray(errors) ? errors.map((e: AjvError) => ({ field: fieldOf(e), message: String(e.message ?? ''), code: typeof e.keyword === 'string' ? e.keyword : undefined })) : [];
  noteValidation('ajv', list);
}

/** Each compiled function as the app gets it: one front a function, so that the app's references compare equal. */
const fronts = new WeakMap<Compiled, Compiled>();

/**
 * The app's compiled validator behind a Proxy that sees each call's verdict: false (the errors are
 * on the function, as ajv puts them), or for an `$async` schema a rejection carrying them. Every
 * property read and write goes to ajv's function, so `validate.errors` is what ajv set.
 */
function front(validate: unknown): unknown {
  if (typeof validate !== 'function') return validate;
  const fn = validate as Compiled;
  let seen = fronts.get(fn);
  if (seen !== undefined) return seen;
  seen = new Proxy(fn, {
    apply(target, self, args) {
      const valid = Reflect.apply(target, self, args);
      if (valid === false) failed(target.errors);
      else if (target.$async === true && valid instanceof Promise) {
        return awaited(valid, (err) => {
          if (Array.isArray((err as { errors?: unknown })?.errors)) failed((err as { errors: unknown[] }).errors);
        });
      }
      return valid;
    },
  });
  fronts.set(fn, seen);
  return seen;
}

/**
 * ajv: what compile(), getSchema() and compileAsync() hand the app (and validate() uses inside) is
 * given a front; ajv's own code and the functions it generates call each other directly. Hooked on
 * the core class every Ajv (draft 7, 2019, 2020, JTD) extends. Validators compiled before the
 * profiler saw ajv are not followed (ajv is hooked as it loads on Node 22.15 and later).
 */
export const ajv: DriverAdapter = {
  name: 'ajv',
  panel: 'security',
  main: /[\\/]node_modules[\\/]ajv[\\/]dist[\\/](?:ajv|2019|2020|jtd)\.js$/,
  matches: (loaded) => typeof ((loaded as { default?: { prototype?: { compile?: unknown } } } | null)?.default ?? (loaded as { prototype?: { compile?: unknown } } | null))?.prototype?.compile === 'function',
  hook(loaded) {
    const Ajv = ((loaded as { default?: unknown }).default ?? loaded) as { prototype: object };
    const core = ownerOf(Ajv.prototype, 'compile');
    if (core === undefined || hooked.has(core)) return;
    hooked.add(core);
    for (const name of ['compile', 'getSchema'] as const) {
      const original = core[name] as Compile;
      core[name] = function (this: unknown, ...args: unknown[]) {
        return front(original.apply(this, args));
      };
    }
    const compileAsync = core.compileAsync as Compile;
    if (typeof compileAsync === 'function') {
      core.compileAsync = function (this: unknown, ...args: unknown[]) {
        return (compileAsync.apply(this, args) as Promise<unknown>).then(front);
      };
    }
  },
};

const hooked = new WeakSet<object>();
