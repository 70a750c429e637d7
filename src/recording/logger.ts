import { format } from 'node:util';
import { performance } from 'node:perf_hooks';
import { currentContext, type LogLevel, type RequestContext } from './context.js';

export interface Logger {
  debug(message: string, context?: unknown): void;
  info(message: string, context?: unknown): void;
  warn(message: string, context?: unknown): void;
  error(message: string, context?: unknown): void;
}

/** Lines beyond this many per request are counted, not kept: a chatty loop must not eat the memory. */
export const MAX_LOG_LINES = 1000;

export function addLine(ctx: RequestContext, level: LogLevel, message: string, context: unknown, channel: 'app' | 'console'): void {
  if (ctx.logs.length >= MAX_LOG_LINES) return;
  ctx.logs.push({ time: Date.now(), level, message, context, channel });
}

function makeLogger(resolve: () => RequestContext | undefined): Logger {
  const at = (level: LogLevel) => (message: string, context?: unknown) => {
    const ctx = resolve();
    if (ctx) addLine(ctx, level, String(message), context, 'app');
  };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** The logger bound to whichever request is running (AsyncLocalStorage); outside a request it drops lines. */
export const logger: Logger = makeLogger(currentContext);

/** A logger bound to one request, for req.log: it works even where async context is lost. */
export const requestLogger = (ctx: RequestContext): Logger => makeLogger(() => ctx);

const CONSOLE_LEVELS: [keyof Console, LogLevel][] = [
  ['debug', 'debug'], ['log', 'info'], ['info', 'info'], ['warn', 'warn'], ['error', 'error'],
];

let consoleCaptured = false;

/**
 * Mirror console.* lines written during a request into its profile. The original method is
 * always called first with the same arguments, so stdout and stderr see exactly what they would.
 */
export function captureConsole(): void {
  if (consoleCaptured) return;
  consoleCaptured = true;
  for (const [method, level] of CONSOLE_LEVELS) {
    const original = console[method] as (...args: unknown[]) => void;
    (console as unknown as Record<string, unknown>)[method] = function (this: Console, ...args: unknown[]) {
      original.apply(this, args);
      const ctx = currentContext();
      if (ctx) addLine(ctx, level, format(...args), undefined, 'console');
    };
  }
}

export const sinceStart = (ctx: RequestContext): number => performance.now() - ctx.start;
