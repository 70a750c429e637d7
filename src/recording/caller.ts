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
const sites = (_: Error, stack: Site[]) => stack;

/**
 * The app's line that led here: the first frame outside node_modules, Node's own code and this
 * package, as `file:line`. V8 hands the frames over as objects (no stack string is formatted),
 * and only as many as it takes to get past a driver's own.
 */
export function callerFrame(): string | undefined {
  // V8 builds an object per frame: most callers are a few frames above the driver, so a short
  // stack is tried first, and a long one only when the app's frame lies deeper (an ORM in between).
  const near = frameIn(SHORT);
  return near === null ? (frameIn(LONG) ?? undefined) : near;
}

const SHORT = 7;
const LONG = 40;

function frameIn(depth: number): string | undefined | null {
  const stack = stackOf(depth, frameIn);
  for (const site of stack) {
    const at = appLine(site);
    if (at !== undefined) return at;
  }
  // null: none in a stack that was cut short, worth a deeper look; undefined: there is none.
  return stack.length >= depth && depth < LONG ? null : undefined;
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

/** `file:line` of a frame of the app's own, or undefined for Node's, a library's or this package's. */
function appLine(site: Site): string | undefined {
  const name = site.getFileName();
  // Tested on the name as V8 has it (a path, or a file: URL for an ES module): converting each costs more than the stack.
  if (name === undefined || name === null || name.startsWith('node:') || isOwn(name) || name.includes('/node_modules/') || name.includes(NODE_MODULES)) return undefined;
  const file = name.startsWith('file://') ? fileURLToPath(name) : name;
  if (!path.isAbsolute(file)) return undefined;
  try {
    return original(name, file, site.getLineNumber() ?? 0, site.getColumnNumber() ?? 0);
  } catch {
    return undefined;
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
