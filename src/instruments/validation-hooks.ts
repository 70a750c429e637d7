import nodeModule from 'node:module';
import { noteValidation, watchedParse, ZOD_WATCHED, type FieldError } from '../recording/validations.js';
import { VALIBOT_PARSERS, valibotIssues, watchedValibotSource } from './valibot.js';
import { watchedZodSource, ZOD_PARSE_MODULE, ZOD_PARSERS, zodIssues } from './zod.js';

const WATCH_KEY = 'express-web-profiler.watch-parser';
/** Told by a library's own code, as it loads through the hooks, of a failure it is about to answer: see watchedValibotSource. */
const REFUSED_KEY = 'express-web-profiler.validation-refused';
/** Set once valibot's ES module build is watched too (the hooks entry's, not the profiler's own). */
const VALIBOT_WATCHED = Symbol.for('express-web-profiler.valibot-watched');
const LIBRARIES: Record<string, { parsers: Record<string, boolean>; read: (failure: unknown) => FieldError[] }> = {
  zod: { parsers: ZOD_PARSERS, read: zodIssues },
  valibot: { parsers: VALIBOT_PARSERS, read: valibotIssues },
};

/** valibot's ES module build, as Node names it (our own import of it carries a query, and passes). */
const VALIBOT_ESM = /\/node_modules\/valibot\/dist\/index\.mjs$/;

/** The module in front of valibot's, where its source is not as watchedValibotSource knows it: all its exports, its parse functions watched. */
function valibotFront(url: string): string {
  const original = JSON.stringify(`${url}?web-profiler=original`);
  return [
    `import * as valibot from ${original};`,
    `export * from ${original};`,
    `const watch = globalThis[Symbol.for(${JSON.stringify(WATCH_KEY)})] ?? ((l, n, f) => f);`,
    ...Object.keys(VALIBOT_PARSERS).map((name) => `export const ${name} = watch('valibot', ${JSON.stringify(name)}, valibot.${name});`),
    '',
  ].join('\n');
}

/** The process's one set of watches (a second copy of the profiler finds them). Not named `global`: jest 26 wraps a module in a function that has a parameter of that name. */
const shared = globalThis as Record<symbol, unknown>;
type Loaded = { format?: string; source?: string | ArrayBufferView | null; shortCircuit?: boolean };
type LoadHook = (url: string, context: object, nextLoad: (url: string, context: object) => Loaded) => Loaded;
const registerHooks = (nodeModule as unknown as { registerHooks?: (hooks: { load: LoadHook }) => unknown }).registerHooks;

/**
 * What the profiler cannot follow from inside an app, because a library's exports are bindings (ES
 * modules) or frozen (zod's CommonJS build) by the time the app has them, it follows by taking
 * part as the library loads (module.registerHooks, Node 22.15, 23.5 and later): zod's parse
 * module is rewritten so that its parse functions are watched, and, with `valibot`, valibot's ES
 * module build tells of each failure (see watchedValibotSource). Only loads after this call are seen. Returns false where
 * Node has no registerHooks. Once a process: a second call (the hooks entry, then the profiler)
 * adds valibot's only.
 */
export function watchValidations(options: { valibot: boolean }): boolean {
  // Under jest the hooks would attach to the loader that runs jest itself (jest 30 refuses them).
  if (typeof registerHooks !== 'function' || process.env.JEST_WORKER_ID !== undefined) return false;
  if (shared[Symbol.for(WATCH_KEY)] !== undefined) {
    if (options.valibot) shared[VALIBOT_WATCHED] = true;
    return true;
  }
  shared[Symbol.for(WATCH_KEY)] = (library: string, name: string, fn: unknown) => {
    const known = LIBRARIES[library];
    return known === undefined || typeof fn !== 'function' ? fn : watchedParse(library, fn as (...args: unknown[]) => unknown, known.parsers[name] === true, known.read);
  };
  shared[Symbol.for(REFUSED_KEY)] = (library: string, failure: unknown) => {
    const known = LIBRARIES[library];
    if (known !== undefined) noteValidation(library, () => known.read(failure));
  };
  if (options.valibot) shared[VALIBOT_WATCHED] = true;
  try {
    registerHooks({
      load(url, context, nextLoad) {
        const valibot = shared[VALIBOT_WATCHED] === true && VALIBOT_ESM.test(url);
        if (!valibot && !ZOD_PARSE_MODULE.test(url)) return nextLoad(url, context);
        const loaded = nextLoad(url, context);
        if (loaded.source === null || loaded.source === undefined) return loaded;
        const text = typeof loaded.source === 'string' ? loaded.source : Buffer.from(loaded.source.buffer, loaded.source.byteOffset, loaded.source.byteLength).toString('utf8');
        if (valibot) {
          const watched = watchedValibotSource(text, REFUSED_KEY);
          return watched === undefined ? { format: 'module', source: valibotFront(url), shortCircuit: true } : { ...loaded, source: watched };
        }
        const watched = watchedZodSource(text, WATCH_KEY);
        if (watched !== text) shared[ZOD_WATCHED] = true;
        return { ...loaded, source: watched };
      },
    });
  } catch {
    // A loader that refuses hooks (a test runner's sandbox): validations are followed as they can be without.
    for (const key of [Symbol.for(WATCH_KEY), Symbol.for(REFUSED_KEY), VALIBOT_WATCHED]) delete shared[key];
    return false;
  }
  return true;
}
