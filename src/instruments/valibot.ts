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
 * A parse function of valibot's ES module build, up to the line that reads its dataset: the issues
 * are known there, before a ValiError is made of them.
 */
const PARSE_DATASET = /((?:async )?function (?:parse|parseAsync|safeParse|safeParseAsync)\(schema, input, config\$1\) \{\n\s*const dataset = (?:await )?schema\["~run"\]\([^\n]*\);)/g;

/**
 * valibot's ES module build as it loads through the hooks, its four parse functions (and so the
 * functions parser() and safeParser() make, which call them) each telling `refused` (a global,
 * under `key`) of a dataset with issues. The call is put at the end of the line that reads the
 * dataset: the module keeps its URL, and every other line and column, and no frame of the
 * profiler's stands in a ValiError's stack. Undefined where valibot's source is not as known.
 */
export function watchedValibotSource(source: string, key: string): string | undefined {
  let found = 0;
  const out = source.replace(PARSE_DATASET, (line: string) => {
    found++;
    return `${line} if (dataset.issues) globalThis[Symbol.for(${JSON.stringify(key)})]?.("valibot", dataset);`;
  });
  return found === Object.keys(VALIBOT_PARSERS).length ? out : undefined;
}

/**
 * valibot: its parse functions are module functions, which a CommonJS app calls as properties of
 * the module (patched here, as the module loads on Node 22.15 and later, so a destructured import
 * gets them too). An ES module app's bindings cannot be changed from outside: `node --import
 * express-web-profiler/hooks` has valibot's ES module build tell of each failure as it loads
 * (watchedValibotSource). In a CommonJS app, functions made by parser() and safeParser() call
 * valibot's own and are not followed.
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
