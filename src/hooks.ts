// `node --import express-web-profiler/hooks app.js` (an ES module app or a CommonJS one; or
// --require): what the profiler cannot follow from inside an app, because a library's exports are
// bindings (ES modules) or frozen (zod's CommonJS build) by the time the app has them, it follows
// by taking part as the library loads: zod's and valibot's parse functions are watched, so that a
// validation the app answers itself is recorded (see instruments/zod.ts and valibot.ts). Needs
// module.registerHooks (Node 22.15, 23.5 and later).
import nodeModule from 'node:module';
import { watchedParse, type FieldError } from './recording/validations.js';
import { VALIBOT_PARSERS, valibotIssues } from './instruments/valibot.js';
import { watchedZodSource, ZOD_PARSE_MODULE, ZOD_PARSERS, zodIssues } from './instruments/zod.js';

const WATCH_KEY = 'express-web-profiler.watch-parser';
const LIBRARIES: Record<string, { parsers: Record<string, boolean>; read: (failure: unknown) => FieldError[] }> = {
  zod: { parsers: ZOD_PARSERS, read: zodIssues },
  valibot: { parsers: VALIBOT_PARSERS, read: valibotIssues },
};

/** valibot's ES module build, as Node names it (our own import of it carries a query, and passes). */
const VALIBOT_ESM = /\/node_modules\/valibot\/dist\/index\.mjs$/;

/** The module in front of valibot's: all its exports, its parse functions watched. */
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

const global = globalThis as Record<symbol, unknown>;
const registerHooks = (nodeModule as unknown as { registerHooks?: (hooks: { load: LoadHook }) => unknown }).registerHooks;
type Loaded = { format?: string; source?: string | ArrayBufferView | null; shortCircuit?: boolean };
type LoadHook = (url: string, context: object, nextLoad: (url: string, context: object) => Loaded) => Loaded;

if (global[Symbol.for(WATCH_KEY)] !== undefined) {
  // Loaded twice (--import and --require, or two copies): one watch is enough.
} else if (typeof registerHooks === 'function') {
  global[Symbol.for(WATCH_KEY)] = (library: string, name: string, fn: unknown) => {
    const known = LIBRARIES[library];
    return known === undefined || typeof fn !== 'function' ? fn : watchedParse(library, fn as (...args: unknown[]) => unknown, known.parsers[name] === true, known.read);
  };
  registerHooks({
    load(url, context, nextLoad) {
      if (VALIBOT_ESM.test(url)) return { format: 'module', source: valibotFront(url), shortCircuit: true };
      const loaded = nextLoad(url, context);
      if (!ZOD_PARSE_MODULE.test(url) || loaded.source === null || loaded.source === undefined) return loaded;
      const text = typeof loaded.source === 'string' ? loaded.source : Buffer.from(loaded.source.buffer, loaded.source.byteOffset, loaded.source.byteLength).toString('utf8');
      return { ...loaded, source: watchedZodSource(text, WATCH_KEY) };
    },
  });
} else {
  process.emitWarning(`express-web-profiler/hooks needs module.registerHooks (Node 22.15 and later; this is ${process.version}): validations of zod and of ES module valibot are not recorded`, { code: 'WEB_PROFILER_HOOKS' });
}
