import { callerFrame } from './caller.js';
import { boundFields, noteCheck, type Check } from './checks.js';
import { requestOf } from './inside.js';

/** One failing field of a validation, as the library worded it: its path, message, the rule it broke, and the value when the library keeps it. */
export interface FieldError {
  field: string;
  message: string;
  code?: string;
  value?: unknown;
}

/** Set once zod's parse module has loaded through the profiler's load hooks (instruments/validation-hooks.ts): its validations are followed. */
export const ZOD_WATCHED = Symbol.for('express-web-profiler.zod-watched');

/** zod 4 is loaded (it marks the global it keeps its config in), and its parse module did not load through the hooks: its refusals are not seen. */
export const zodUnfollowed = (): boolean =>
  (globalThis as { __zod_globalConfig?: unknown }).__zod_globalConfig !== undefined && (globalThis as Record<symbol, unknown>)[ZOD_WATCHED] !== true;

/** What a refused request says where zod may have refused it unseen. */
export const ZOD_UNSEEN = "zod is loaded, and its validations are not followed: a refusal of zod's is not recorded. Start the app with node --import express-web-profiler/hooks (Node 22.15 and later), or create the profiler before the app loads zod.";

/** A validation's answer (400, 422) with no refusal recorded, in an app whose zod is not followed: the check that says how to follow it. */
export function unseenRefusal(status: number, checks: Check[] | undefined): Check | undefined {
  if ((status !== 400 && status !== 422) || checks?.some((c) => c.verdict === 'refused') || !zodUnfollowed()) return undefined;
  return { library: 'zod', verdict: 'unseen', reason: ZOD_UNSEEN };
}

/** Validations noted before the library had put its issues on the error (zod's, noted as the error is made): read when the request is captured. */
const pending = new WeakMap<Check, () => FieldError[]>();

/**
 * A validation the app ran that failed (zod, joi, yup, valibot, ajv), noted where it ran, whatever
 * the app then answered: most apps answer a generic 400 of their own, and the verdict never
 * reaches the response or an error the profiler sees. Only failures are noted: a passing parse
 * costs the library's own work and nothing more. `at` is the app's line that called the library.
 */
export function noteValidation(library: string, errors: FieldError[] | (() => FieldError[])): void {
  const ctx = requestOf();
  if (ctx === undefined) return;
  try {
    const check: Check = { library, verdict: 'refused', reason: 'validation failed', at: callerFrame() };
    if (typeof errors === 'function') pending.set(check, errors);
    else check.fields = { errors };
    noteCheck(ctx, check);
  } catch {
    // Inside the app's validation: whatever its issues hold, the app goes on.
  }
}

/**
 * A library's promise, awaited in an async function of ours: a failure noted here finds the app's
 * line in V8's async frames (the app's own await of what this returns), where a then() callback
 * would find none.
 */
export async function awaited<T>(promise: Promise<T>, failure: (err: unknown) => void, success?: (value: T) => void): Promise<T> {
  let value: T;
  try {
    value = await promise;
  } catch (err) {
    failure(err);
    throw err;
  }
  success?.(value);
  return value;
}

/** The request's checks with the issues of those noted early read now. */
export function settledChecks(checks: Check[]): Check[] {
  for (const check of checks) {
    const read = pending.get(check);
    if (read === undefined) continue;
    pending.delete(check);
    try {
      check.fields = { errors: read() };
      boundFields(check);
    } catch {
      // Issues that cannot be read leave the verdict and the line.
    }
  }
  return checks;
}

type Fn = (this: unknown, ...args: unknown[]) => unknown;

/**
 * A library's parse function, noting each failure: a safe one's (`safe`) by the `{ success: false }`
 * it returns, any by what it throws or rejects with. `read` makes the fields of a failure (the
 * result, or the error) when the request is captured, off the app's way: zod builds its error only
 * when `error` is read.
 */
export function watchedParse(library: string, original: Fn, safe: boolean, read: (failure: unknown) => FieldError[]): Fn {
  const failed = (failure: unknown) => noteValidation(library, () => read(failure));
  const thrown = (err: unknown) => {
    if (err !== null && typeof err === 'object' && 'issues' in err) failed(err);
  };
  const returned = (result: unknown) => {
    if (safe && (result as { success?: unknown } | null)?.success === false) failed(result);
  };
  const watched = function (this: unknown, ...args: unknown[]) {
    let result: unknown;
    try {
      result = original.apply(this, args);
    } catch (err) {
      thrown(err);
      throw err;
    }
    if (!(result instanceof Promise)) {
      returned(result);
      return result;
    }
    return awaited(result, thrown, returned);
  };
  Object.defineProperty(watched, 'name', { value: original.name });
  Object.defineProperty(watched, 'length', { value: original.length });
  return watched;
}

/** A path as the libraries give one (an array of keys, or of `{ key }` steps), dotted. */
export const dotted = (path: unknown): string =>
  Array.isArray(path) ? path.map((step) => String(step !== null && typeof step === 'object' && 'key' in step ? (step as { key: unknown }).key : step)).join('.') : path === undefined || path === null ? '' : String(path);
