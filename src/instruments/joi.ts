import { createRequire } from 'node:module';
import { awaited, dotted, noteValidation, type FieldError } from '../recording/validations.js';
import type { DriverAdapter } from './driver.js';

type Entry = (value: unknown, schema: unknown, prefs?: unknown) => unknown;
type JoiError = { details?: { path?: unknown; message?: unknown; type?: unknown; context?: { value?: unknown } }[]; message?: unknown };

/**
 * joi: every schema's validate() and validateAsync() (and through them Joi.assert and attempt)
 * run the validator module's entry() and entryAsync(), which joi's own code calls as properties of
 * that module: wrapped there, each failing validation is noted with joi's details, whether the
 * app reads its `error` or not. joi ships CommonJS only: an ES module app imports this same copy.
 */
function failed(error: unknown): void {
  const e = error as JoiError;
  const errors: FieldError[] = Array.isArray(e.details)
    ? e.details.map((d) => ({ field: dotted(d.path), message: String(d.message ?? ''), code: typeof d.type === 'string' ? d.type : undefined, value: d.context?.value }))
    : [{ field: '', message: String(e.message ?? error) }];
  noteValidation('joi', errors);
}

export const joi: DriverAdapter = {
  name: 'joi',
  panel: 'security',
  main: /[\\/]node_modules[\\/]joi[\\/]lib[\\/]index\.js$/,
  matches: (loaded) => typeof (loaded as { ValidationError?: unknown } | null)?.ValidationError === 'function' && typeof (loaded as { isSchema?: unknown }).isSchema === 'function',
  hook(_loaded, file) {
    if (file === undefined) return;
    const validator = createRequire(file)('./validator.js') as { entry?: Entry; entryAsync?: Entry };
    const { entry, entryAsync } = validator;
    if (typeof entry !== 'function' || typeof entryAsync !== 'function') return;
    validator.entry = function (this: unknown, value: unknown, schema: unknown, prefs?: unknown) {
      const outcome = entry.call(this, value, schema, prefs) as { error?: unknown };
      if (outcome?.error) failed(outcome.error);
      return outcome;
    };
    validator.entryAsync = function (this: unknown, value: unknown, schema: unknown, prefs?: unknown) {
      return awaited(entryAsync.call(this, value, schema, prefs) as Promise<unknown>, (err) => {
        if ((err as { isJoi?: unknown })?.isJoi === true) failed(err);
      });
    };
  },
};
