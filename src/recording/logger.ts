import Module from 'node:module';
import { format } from 'node:util';
import { isLoaded } from './loaded.js';
import { currentContext, type LogChannel, type LogLevel, type WorkContext } from './context.js';

export interface Logger {
  debug(message: string, context?: unknown): void;
  info(message: string, context?: unknown): void;
  warn(message: string, context?: unknown): void;
  error(message: string, context?: unknown): void;
}

/** Lines beyond this many per request are counted, not kept: a chatty loop must not eat the memory. */
export const MAX_LOG_LINES = 1000;

export function addLine(ctx: WorkContext, level: LogLevel, message: string, context: unknown, channel: LogChannel, logger?: string): void {
  if (ctx.logs.length >= MAX_LOG_LINES) ctx.logsDropped++;
  else ctx.logs.push(logger === undefined ? { time: Date.now(), level, message, context, channel } : { time: Date.now(), level, message, context, channel, logger });
}

/** A line as its logger wrote it (pino's JSON): read later, off the request's thread. */
export function addRawLine(ctx: WorkContext, level: LogLevel, raw: string, channel: LogChannel): void {
  if (ctx.logs.length >= MAX_LOG_LINES) ctx.logsDropped++;
  else ctx.logs.push({ time: Date.now(), level, message: '', channel, raw });
}

const at = (level: LogLevel) => (message: string, context?: unknown) => {
  const ctx = currentContext();
  if (ctx) addLine(ctx, level, String(message), context, 'app');
};

/** The logger bound to whichever request is running (see currentContext); outside a request it drops lines. */
export const logger: Logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };

/** req.log: bound to one request, so it works even where async context is lost; one object, no closures. */
export class RequestLogger implements Logger {
  constructor(private readonly ctx: WorkContext) {}
  debug(message: string, context?: unknown) {
    addLine(this.ctx, 'debug', String(message), context, 'app');
  }
  info(message: string, context?: unknown) {
    addLine(this.ctx, 'info', String(message), context, 'app');
  }
  warn(message: string, context?: unknown) {
    addLine(this.ctx, 'warn', String(message), context, 'app');
  }
  error(message: string, context?: unknown) {
    addLine(this.ctx, 'error', String(message), context, 'app');
  }
}

/** Node's own module cache: under jest, a module's require.cache is jest's registry, which does not hold the runner's modules. */
const nodeCache = (): Record<string, NodeModule | undefined> => (Module as unknown as { _cache?: Record<string, NodeModule | undefined> })._cache ?? {};

const CONSOLE_LEVELS: [keyof Console, LogLevel][] = [
  ['debug', 'debug'], ['log', 'info'], ['info', 'info'], ['warn', 'warn'], ['error', 'error'],
];

let consoleCaptured = false;
/** Set while a logger the profiler follows itself writes to the console (log4js's console appender): its line is kept already. */
let consoleQuiet = 0;

/** Run `write` with console lines not kept: a followed logger's appenders writing a line it kept. */
export function quietConsole<T>(write: () => T): T {
  consoleQuiet++;
  try {
    return write();
  } finally {
    consoleQuiet--;
  }
}

/**
 * Mirror console.* lines written during a request into its profile. The original method is
 * always called first with the same arguments, so stdout and stderr see exactly what they would.
 */
export function captureConsole(): void {
  if (consoleCaptured) return;
  consoleCaptured = true;
  if (captureJestConsole()) return;
  for (const [method, level] of CONSOLE_LEVELS) {
    const original = console[method] as (...args: unknown[]) => void;
    (console as unknown as Record<string, unknown>)[method] = function (this: Console, ...args: unknown[]) {
      original.apply(this, args);
      const ctx = consoleQuiet === 0 ? currentContext() : undefined;
      if (ctx) consoleLine(ctx, level, args);
    };
  }
}

/** jest's console methods, by the level their lines are. */
const JEST_LEVELS: Record<string, LogLevel> = { log: 'info', info: 'info', warn: 'warn', error: 'error', debug: 'debug', trace: 'debug', assert: 'error' };
const JEST_CONSOLE = /[\\/]@jest[\\/]console[\\/]build[\\/](BufferedConsole|index)\.js$/;
/** On jest's BufferedConsole, shared by the copies of the profiler its test files load: each copy's way to keep a line, held weakly. */
const kJestLines = Symbol.for('express-web-profiler.jest-console-lines');

type JestWrite = (this: unknown, buffer: unknown, type: string, message: string, level: unknown) => unknown;
type KeepLine = (type: string, message: string) => void;

/** This copy's way to keep a jest console line: held strongly here, weakly by the shared wrapper. */
const keepJestLine: KeepLine = (type, message) => {
  const ctx = consoleQuiet === 0 ? currentContext() : undefined;
  if (ctx) addLine(ctx, JEST_LEVELS[type] ?? 'info', message.trimStart(), undefined, 'console');
};

/**
 * Under jest, console lines are jest's (BufferedConsole, or CustomConsole for one file), and jest
 * names where each came from by counting frames up from BufferedConsole.write(): a wrapper of
 * console.log would be that place (`node_modules/express-web-profiler/…/logger.js`). write()
 * itself is wrapped instead, once a process: jest leaves out every frame up to the write it looks
 * up, which is then the wrapper, so the place stays the app's line. Each copy of the profiler a
 * test file loads (jest's module registry) adds its way to keep lines, which the wrapper holds
 * weakly: a finished test file's copy is not kept alive by it.
 */
function captureJestConsole(): boolean {
  const name = (console as unknown as { constructor?: { name?: unknown } }).constructor?.name;
  if (name !== 'BufferedConsole' && name !== 'CustomConsole' && name !== 'NullConsole') return false;
  const cache = nodeCache();
  let found = false;
  for (const file of Object.keys(cache)) {
    if (!JEST_CONSOLE.test(file)) continue;
    // jest 29 has a file of its own for it; jest 30 bundles it into build/index.js.
    const exported = cache[file]?.exports as { BufferedConsole?: unknown; default?: unknown } | undefined;
    const Buffered = (exported?.BufferedConsole ?? exported?.default) as JestConsole | undefined;
    if (typeof Buffered?.write === 'function') found = keepJestLines(Buffered) || found;
  }
  return found;
}

type JestConsole = { write?: unknown; [kJestLines]?: Set<WeakRef<KeepLine>> };

/** BufferedConsole.write wrapped once a process (see captureJestConsole), this copy's keeper added. */
function keepJestLines(Buffered: JestConsole): boolean {
  let keepers = Buffered[kJestLines];
  if (keepers === undefined) {
    keepers = Buffered[kJestLines] = new Set();
    const write = Buffered.write as JestWrite;
    const shared = keepers;
    Buffered.write = function (this: unknown, buffer: unknown, type: string, message: string, level: unknown) {
      const written = write.call(this, buffer, type, message, level);
      for (const ref of shared) {
        const keep = ref.deref();
        if (keep === undefined) shared.delete(ref);
        else {
          try {
            keep(type, String(message));
          } catch {
            // A line that cannot be kept is not worth the test's output.
          }
        }
      }
      return written;
    };
  }
  // jest 29 names the class twice (its own file, and index.js's export of it): one keeper a copy.
  for (const ref of keepers) if (ref.deref() === keepJestLine) return true;
  keepers.add(new WeakRef(keepJestLine));
  return true;
}

/**
 * A console line as the profile keeps it: its text, and the objects it was given (not Errors,
 * whose stack the text shows) as its context, which the logs panel shows as a tree to unfold.
 */
function consoleLine(ctx: WorkContext, level: LogLevel, args: unknown[]): void {
  const objects = args.filter((a) => a !== null && typeof a === 'object' && !(a instanceof Error) && !ArrayBuffer.isView(a));
  if (objects.length === 0) return addLine(ctx, level, format(...args), undefined, 'console');
  // A format string places its objects itself (`'%s: %o'`): its text stays whole.
  const formats = typeof args[0] === 'string' && /%[sdifjoOc]/.test(args[0]);
  const rest = args.filter((a) => !objects.includes(a));
  const text = formats ? format(...args) : rest.length > 0 ? format(...rest) : objects.map((o) => (Array.isArray(o) ? `[${o.length}]` : '{…}')).join(' ');
  addLine(ctx, level, text, objects.length === 1 ? objects[0] : objects, 'console');
}

/**
 * Whether pino-http is loaded: it gives req.log a pino logger of its own, but only where req.log
 * is not set already, so the profiler then leaves req.log to it (pino's lines reach the profile
 * through pino's channel).
 */
export const pinoHttpLoaded = (): boolean => isLoaded(/[\\/]node_modules[\\/]pino-http[\\/]/);
