import { awaited, noteValidation } from '../recording/validations.js';
import type { DriverAdapter } from './driver.js';
import { ownerOf } from './driver.js';

type Validate = (this: unknown, value: unknown, options?: unknown) => unknown;
type YupError = { name?: unknown; path?: unknown; message?: unknown; type?: unknown; value?: unknown; inner?: YupError[] };

/** Errors already noted: one that passes through a nested validate (lazy, when) is one failure. */
const noted = new WeakSet<object>();

function failed(error: unknown): void {
  const e = error as YupError;
  if (e?.name !== 'ValidationError' || noted.has(e)) return;
  noted.add(e);
  const each = Array.isArray(e.inner) && e.inner.length > 0 ? e.inner : [e];
  noteValidation('yup', each.map((i) => ({ field: typeof i.path === 'string' ? i.path : '', message: String(i.message ?? ''), code: typeof i.type === 'string' ? i.type : undefined, value: i.value })));
}

/**
 * yup: validate() and validateSync() of every schema (isValid, validateAt and lazy schemas go
 * through them), on the prototype they share: a failure is noted with each failing path. yup's
 * ES module build is for bundlers: Node's import runs this CommonJS copy.
 */
export const yup: DriverAdapter = {
  name: 'yup',
  panel: 'security',
  main: /[\\/]node_modules[\\/]yup[\\/]index\.js$/,
  matches: (loaded) => typeof (loaded as { Schema?: unknown } | null)?.Schema === 'function' && typeof (loaded as { ValidationError?: unknown }).ValidationError === 'function',
  hook(loaded) {
    const proto = ownerOf((loaded as { Schema: { prototype: object } }).Schema.prototype, 'validate');
    if (proto === undefined) return;
    const validate = proto.validate as Validate;
    const validateSync = proto.validateSync as Validate;
    proto.validate = function (this: unknown, value: unknown, options?: unknown) {
      return awaited(validate.call(this, value, options) as Promise<unknown>, failed);
    };
    if (typeof validateSync !== 'function') return;
    proto.validateSync = function (this: unknown, value: unknown, options?: unknown) {
      try {
        return validateSync.call(this, value, options);
      } catch (err) {
        failed(err);
        throw err;
      }
    };
  },
};
