import { dotted, watchedParse, type FieldError } from '../recording/validations.js';
import type { DriverAdapter } from './driver.js';

type Issue = { path?: unknown; message?: unknown; type?: unknown; input?: unknown };

/** Its parse functions, by whether they answer a failure (safe) or throw it. */
export const VALIBOT_PARSERS = { safeParse: true, safeParseAsync: true, parse: false, parseAsync: false } as const;

/** A failed safeParse's result and a ValiError both carry the issues. */
export function valibotIssues(failure: unknown): FieldError[] {
  const issues = (failure as { issues?: unknown }).issues;
  return Array.isArray(issues) ? issues.map((i: Issue) => ({ field: dotted(i.path), message: String(i.message ?? ''), code: typeof i.type === 'string' ? i.type : undefined, value: i.input })) : [];
}

/**
 * valibot: its parse functions are module functions, which a CommonJS app calls as properties of
 * the module (patched here, as the module loads on Node 22.15 and later, so a destructured import
 * gets them too). An ES module app's bindings cannot be changed from outside: `node --import
 * express-web-profiler/hooks` puts a module of ours in front of valibot's (see hooks.ts).
 * Functions made by parser() and safeParser() call valibot's own and are not followed.
 */
export const valibot: DriverAdapter = {
  name: 'valibot',
  panel: 'security',
  main: /[\\/]node_modules[\\/]valibot[\\/]dist[\\/]index\.cjs$/,
  matches: (loaded) => typeof (loaded as { safeParse?: unknown } | null)?.safeParse === 'function' && typeof (loaded as { pipe?: unknown }).pipe === 'function' && typeof (loaded as { ValiError?: unknown }).ValiError === 'function',
  hook(loaded) {
    const module = loaded as Record<string, unknown>;
    for (const [name, safe] of Object.entries(VALIBOT_PARSERS)) {
      const original = module[name];
      if (typeof original !== 'function' || Object.getOwnPropertyDescriptor(module, name)?.writable !== true) continue;
      module[name] = watchedParse('valibot', original as (...args: unknown[]) => unknown, safe, valibotIssues);
    }
  },
};
