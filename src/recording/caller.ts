import { findSourceMap, type SourceMap } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The package's own directory (src/ or dist/ under it), as a path and as ES modules name it: its frames are never the caller, but for the demo's (an app like any other). */
const OWN = path.resolve(__dirname, '..') + path.sep;
const OWN_URL = pathToFileURL(OWN).href;
const DEMO = `${OWN}demo${path.sep}`;
const DEMO_URL = pathToFileURL(DEMO).href;
const isOwn = (name: string) => (name.startsWith(OWN_URL) && !name.startsWith(DEMO_URL)) || (name.startsWith(OWN) && !name.startsWith(DEMO));
const NODE_MODULES = `${path.sep}node_modules${path.sep}`;

type Site = NodeJS.CallSite;

/** The app's files it asked to pass over (its skipFrames option), of every profiler of the process. */
const skipped: (string | RegExp)[] = [];

export function skipFrames(paths: (string | RegExp)[]): void {
  for (const p of paths) if (!skipped.some((q) => String(q) === String(p))) skipped.push(p);
}
const sites = (_: Error, stack: Site[]) => stack;

/**
 * The app's line that led here: the first frame outside node_modules, Node's own code and this
 * package, as `file:line`. V8 hands the frames over as objects (no stack string is formatted),
 * and only as many as it takes to get past a driver's own.
 */
export const callerFrame = (): string | undefined => callerChain(1)[0];

/**
 * The app's lines that led here, innermost first, at most `max`, read off the stack that holds
 * the first of them: its own line, then the lines around it that the same stack has (a
 * wrapper's caller, the route), at no cost beyond finding the first.
 */
export function callerChain(max: number): string[] {
  // V8 builds an object per frame: most callers are a few frames above the driver, so a short
  // stack is tried first, and a long one only when the app's frame lies deeper (an ORM in between).
  return framesIn(SHORT, max) ?? framesIn(LONG, max) ?? [];
}

const SHORT = 7;
const LONG = 40;

/** null: none in a stack that was cut short, worth a deeper look. */
function framesIn(depth: number, max: number): string[] | null {
  const stack = stackOf(depth, framesIn);
  const found: string[] = [];
  for (const site of stack) {
    const at = appLine(site);
    if (at !== undefined && found.push(at) >= max) break;
  }
  return found.length === 0 && stack.length >= depth && depth < LONG ? null : found;
}

/**
 * The app's lines that led here, innermost first, at most `max` (a helper's line, then the
 * route's that called it): for a response that failed, where it was sent from.
 */
export function callerFrames(max: number): string[] {
  const out: string[] = [];
  for (const site of stackOf(LONG, callerFrames)) {
    const at = appLine(site);
    if (at !== undefined && out.push(at) >= max) break;
  }
  return out;
}

/** The call sites above `above` (itself left out), at most `depth`, with the app's own stack settings left as they were. */
export function stackOf(depth: number, above: Function): Site[] {
  const limit = Error.stackTraceLimit;
  const prepare = Error.prepareStackTrace;
  // Node formats a stack of another realm's (jest's test context) with the main realm's function when that realm has none.
  const formats = prepare ?? MainError.prepareStackTrace;
  if (formats !== installed) mapping = mappingOf((installed = formats));
  const holder: { stack?: Site[] } = {};
  Error.stackTraceLimit = depth;
  Error.prepareStackTrace = sites as typeof Error.prepareStackTrace;
  try {
    Error.captureStackTrace(holder, above);
    return holder.stack ?? [];
  } catch {
    return [];
  } finally {
    Error.prepareStackTrace = prepare;
    Error.stackTraceLimit = limit;
  }
}

/** `file:line` of a frame of the app's own, or undefined for Node's, a library's, this package's or one the app asked to pass over. */
function appLine(site: Site): string | undefined {
  const name = site.getFileName();
  // Tested on the name as V8 has it (a path, or a file: URL for an ES module): converting each costs more than the stack.
  if (name === undefined || name === null || name.startsWith('node:') || isOwn(name) || name.includes('/node_modules/') || name.includes(NODE_MODULES)) return undefined;
  const file = name.startsWith('file://') ? fileURLToPath(name) : name;
  if (!path.isAbsolute(file) || (skipped.length > 0 && skipped.some((p) => (typeof p === 'string' ? file === p || file.startsWith(p + path.sep) : p.test(file))))) return undefined;
  try {
    return (mapping === undefined ? undefined : mapping(site, file)) ?? original(name, file, site.getLineNumber() ?? 0, site.getColumnNumber() ?? 0);
  } catch {
    return undefined;
  }
}

/** The Error.prepareStackTrace the app's tools had installed when a stack was last read, and what maps a frame through it. */
let installed: unknown;
let mapping: ((site: Site, file: string) => string | undefined) | undefined;
const PROBE = new Error();

/** The main realm's Error, from code that runs in another (a vm context, as jest runs tests): Node's own functions are the main realm's. */
const MainError: ErrorConstructor = (() => {
  try {
    return ((process.emitWarning as unknown as { constructor: FunctionConstructor }).constructor('return Error') as () => ErrorConstructor)();
  } catch {
    return Error;
  }
})();

/**
 * A frame's line as the app's tools print it in a stack, where a tool that transforms code
 * installed an Error.prepareStackTrace that maps it back: jest (babel, ts-jest, and istanbul's
 * coverage counters, which move every line; jest 30's own formatter), vitest's module runner,
 * ts-node, source-map-support. Node's own source maps know nothing of the code they ran: the frame
 * is formatted by their function and its position read back. A function that gives no such text
 * (one of the app's that returns something else) is not asked again.
 */
function mappingOf(prepare: unknown): typeof mapping {
  // Node's own (the default Error.prepareStackTrace from Node 22) maps what its source maps know, as original() does.
  if (typeof prepare !== 'function' || prepare.name === 'ErrorPrepareStackTrace') return undefined;
  let usable = true;
  // A statement repeated in a loop asks for the same frame each time: each is formatted once.
  const seen = new Map<string, string | undefined>();
  return (site, file) => {
    if (!usable) return undefined;
    const key = `${file}:${site.getLineNumber()}:${site.getColumnNumber()}`;
    if (seen.has(key)) return seen.get(key);
    if (seen.size >= 10_000) seen.clear();
    const found = formatted(site, file);
    seen.set(key, found);
    return found;
  };
  function formatted(site: Site, file: string): string | undefined {
    let text: unknown;
    try {
      text = (prepare as (e: Error, sites: Site[]) => unknown)(PROBE, [site]);
    } catch {
      text = undefined;
    }
    // Its last line: `at fn (file:line:column)` or `at file:line:column`, either after `async` for an async frame.
    const line = typeof text === 'string' ? text.slice(text.lastIndexOf('\n') + 1).trim() : '';
    const where = line.startsWith('at ') ? line.replace(/^at (?:async )?/, '') : '';
    const at = /^(.*):(\d+):\d+$/.exec(where.endsWith(')') ? where.slice(where.lastIndexOf('(') + 1, -1) : where);
    if (at === null) {
      usable = false;
      return undefined;
    }
    const source = at[1].startsWith('file://') ? fileURLToPath(at[1]) : path.resolve(path.dirname(file), at[1]);
    return `${source}:${at[2]}`;
  }
}

/** Each file's source map as Node keeps it (tsx, --enable-source-maps), or null: looked up once a file. */
const maps = new Map<string, SourceMap | null>();

/**
 * `file:line` of the source the app wrote: a file compiled with a source map (TypeScript under tsx,
 * a build run with --enable-source-maps) names its own line, which the compiled one is not.
 */
function original(name: string, file: string, line: number, column: number): string {
  let map = maps.get(name);
  if (map === undefined) {
    try {
      map = findSourceMap(name) ?? null;
    } catch {
      map = null;
    }
    maps.set(name, map);
  }
  if (map === null) return `${file}:${line}`;
  const entry = map.findEntry(line - 1, column - 1) as { originalSource?: string; originalLine?: number };
  if (entry.originalSource === undefined || entry.originalLine === undefined) return `${file}:${line}`;
  const source = entry.originalSource.startsWith('file://') ? fileURLToPath(entry.originalSource) : path.resolve(path.dirname(file), entry.originalSource);
  return `${source}:${entry.originalLine + 1}`;
}
