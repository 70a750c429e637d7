import { createRequire } from 'node:module';
import { currentContext, type LogLevel, type WorkContext } from '../recording/context.js';
import { addLine } from '../recording/logger.js';

const LEVEL = Symbol.for('level');
const MESSAGE = Symbol.for('message');

/** npm's and syslog's level names as the panel's. */
function levelOf(name: unknown): LogLevel {
  switch (String(name)) {
    case 'error': case 'emerg': case 'alert': case 'crit':
      return 'error';
    case 'warn': case 'warning':
      return 'warn';
    case 'info': case 'notice': case 'http':
      return 'info';
    default:
      return 'debug';
  }
}

export interface Info {
  [key: string | symbol]: unknown;
  level?: unknown;
  message?: unknown;
}

/** A winston line into the request's profile: its message, and its other fields as context. */
export function recordLine(ctx: WorkContext, info: Info): void {
  const context: Record<string, unknown> = {};
  let fields = 0;
  for (const key of Object.keys(info)) {
    if (key === 'level' || key === 'message') continue;
    context[key] = info[key];
    fields++;
  }
  const message = typeof info.message === 'string' ? info.message : info.message === undefined ? String(info[MESSAGE] ?? '') : String(info.message);
  addLine(ctx, levelOf(info[LEVEL] ?? info.level), message, fields > 0 ? context : undefined, 'winston');
}

const requireCache = createRequire(__filename).cache;
const LOGGER = /[\\/]node_modules[\\/]winston[\\/]lib[\\/]winston[\\/]logger\.js$/;
const kAuto = Symbol('web-profiler.winston');

/**
 * winston with no setup: every logger of a winston the app has loaded writes each line through
 * Logger.prototype.write, in the code that logged it; the line goes to that request's profile
 * there, before any format or transport (which run later, for a slow transport in another
 * request's callback). What winston writes to its transports does not change.
 */
export function instrumentWinston(): boolean {
  let found = false;
  for (const [file, mod] of Object.entries(requireCache)) {
    if (!LOGGER.test(file) || !mod?.loaded) continue;
    const proto = (mod.exports as { prototype?: { write?: unknown } } | undefined)?.prototype;
    if (typeof proto?.write !== 'function') continue;
    found = true;
    if ((proto.write as { [kAuto]?: true })[kAuto]) continue;
    const write = proto.write as (this: unknown, info: unknown, ...rest: unknown[]) => unknown;
    const recorded = function (this: unknown, info: unknown, ...rest: unknown[]) {
      try {
        const ctx = info !== null && typeof info === 'object' ? currentContext() : undefined;
        if (ctx !== undefined) recordLine(ctx, info as Info);
      } catch {
        // Unrecorded.
      }
      return write.call(this, info, ...rest);
    };
    Object.defineProperty(recorded, kAuto, { value: true });
    proto.write = recorded;
  }
  return found;
}

/** Whether `logger`'s own winston records its lines as they are written (then profilerTransport() adds nothing for it). */
export function writesRecorded(logger: unknown): boolean {
  try {
    for (let p = Object.getPrototypeOf(logger); p !== null && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
      const write = Object.getOwnPropertyDescriptor(p, 'write')?.value as { [kAuto]?: true } | undefined;
      if (write !== undefined) return write[kAuto] === true;
    }
  } catch {
    // A logger that cannot be read: its transport records.
  }
  return false;
}
