import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package's own directory (src/ or dist/ under it): its frames are never the caller. */
const OWN = path.dirname(path.dirname(fileURLToPath(import.meta.url))) + path.sep;

type Site = NodeJS.CallSite;
const sites = (_: Error, stack: Site[]) => stack;

/**
 * The app's line that led here: the first frame outside node_modules, Node's own code and this
 * package, as `file:line`. V8 hands the frames over as objects (no stack string is formatted),
 * and only as many as it takes to get past a driver's own.
 */
export function callerFrame(): string | undefined {
  const limit = Error.stackTraceLimit;
  const prepare = Error.prepareStackTrace;
  const holder: { stack?: Site[] } = {};
  Error.stackTraceLimit = 24;
  Error.prepareStackTrace = sites as typeof Error.prepareStackTrace;
  try {
    Error.captureStackTrace(holder, callerFrame);
    for (const site of holder.stack ?? []) {
      const name = site.getFileName();
      if (name === undefined || name === null || name.startsWith('node:')) continue;
      const file = name.startsWith('file://') ? fileURLToPath(name) : name;
      if (file.startsWith(OWN) || file.includes(`${path.sep}node_modules${path.sep}`) || !path.isAbsolute(file)) continue;
      return `${file}:${site.getLineNumber()}`;
    }
    return undefined;
  } catch {
    return undefined;
  } finally {
    Error.prepareStackTrace = prepare;
    Error.stackTraceLimit = limit;
  }
}
