import Module from 'node:module';
import { format } from 'node:util';
import { currentContext, type LogLevel } from '../recording/context.js';
import { addLine, quietConsole } from '../recording/logger.js';

/** log4js's level names as the panel's. */
function levelOf(name: unknown): LogLevel {
  switch (String(name).toUpperCase()) {
    case 'ERROR': case 'FATAL':
      return 'error';
    case 'WARN':
      return 'warn';
    case 'INFO': case 'MARK':
      return 'info';
    default:
      return 'debug';
  }
}

interface LoggingEvent {
  categoryName?: unknown;
  level?: { levelStr?: unknown };
  data?: unknown;
  context?: unknown;
}

const CLUSTERING = /[\\/]node_modules[\\/]log4js[\\/]lib[\\/]clustering\.js$/;
const kOurs = Symbol('web-profiler.log4js');

/**
 * log4js: every logger of a log4js the app has loaded hands each event to its clustering module's
 * send(), synchronously, in the code that logged it, after the logger has read its call stack
 * (wrapping the logger itself would move the line log4js names by a frame). The event goes to the
 * running request's profile there: its level, category, message (formatted as log4js's layouts
 * format it, without their colours) and context. While log4js's appenders run, console lines are
 * not kept again (its console appender writes the same line, coloured). What log4js writes does
 * not change. Found in Node's own module cache, so a log4js loaded before the profiler is followed.
 */
export function instrumentLog4js(): void {
  const cache = (Module as unknown as { _cache?: Record<string, NodeModule | undefined> })._cache ?? {};
  for (const [file, mod] of Object.entries(cache)) {
    if (!CLUSTERING.test(file) || !mod?.loaded) continue;
    const clustering = mod.exports as { send?: unknown } | undefined;
    const send = clustering?.send as ((event: unknown) => unknown) & { [kOurs]?: true } | undefined;
    if (typeof send !== 'function' || send[kOurs]) continue;
    const recorded = function (this: unknown, event: unknown) {
      const ctx = currentContext();
      if (ctx === undefined) return send.call(this, event);
      try {
        keep(ctx, event as LoggingEvent);
      } catch {
        // Unrecorded.
      }
      return quietConsole(() => send.call(this, event));
    };
    Object.defineProperty(recorded, kOurs, { value: true });
    clustering!.send = recorded;
  }
}

function keep(ctx: NonNullable<ReturnType<typeof currentContext>>, event: LoggingEvent): void {
  const data = Array.isArray(event.data) ? event.data : [event.data];
  const context = event.context !== null && typeof event.context === 'object' && Object.keys(event.context).length > 0 ? event.context : undefined;
  addLine(ctx, levelOf(event.level?.levelStr), format(...data), context, 'log4js', typeof event.categoryName === 'string' ? event.categoryName : undefined);
}
