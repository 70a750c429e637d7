import dc from 'node:diagnostics_channel';
import { currentContext, type LogLevel } from '../recording/context.js';
import { addRawLine } from '../recording/logger.js';

/** pino's numeric levels (trace 10, debug 20, info 30, warn 40, error 50, fatal 60; custom ones between) as the panel's. */
const levelOf = (n: number): LogLevel => (n >= 50 ? 'error' : n >= 40 ? 'warn' : n >= 30 ? 'info' : 'debug');

/** The last line the channel took: a pinoDestination() in the same logger's streams must not take it again. */
let lastTaken: string | undefined;

let subscribed = false;

/**
 * pino ≥ 9.10 publishes each line it makes on `tracing:pino_asJson`, synchronously, in the code
 * that logged it, before any stream or worker transport: the line goes to the running request as
 * pino wrote it, and is read off the request's thread. Nothing pino writes changes.
 */
export function recordPino(tell: (message: string) => void): void {
  if (subscribed) return;
  subscribed = true;
  dc.subscribe('tracing:pino_asJson:end', (message) => {
    // What a subscriber throws, Node rethrows as an uncaught exception.
    try {
      const { arguments: args, result } = message as { arguments: ArrayLike<unknown>; result: unknown };
      if (typeof result !== 'string') return;
      const ctx = currentContext();
      if (ctx === undefined) return;
      lastTaken = result;
      addRawLine(ctx, levelOf(Number(args[2])), result, 'pino');
    } catch (err) {
      tell(`recording a pino line failed: ${(err as Error)?.message ?? err}`);
    }
  });
}

/**
 * For pino older than 9.10, which publishes no channel: a destination to add beside the app's own,
 * `pino({}, pino.multistream([{ stream: process.stdout }, { stream: pinoDestination() }]))`. With a
 * newer pino it takes nothing the channel took already.
 */
export function pinoDestination(): { write(line: string): void; lastLevel?: number } {
  return {
    // pino's multistream then tells the level of each line it writes.
    [Symbol.for('pino.metadata')]: true,
    write(line: string) {
      if (line === lastTaken) return;
      const ctx = currentContext();
      if (ctx !== undefined) addRawLine(ctx, levelOf(Number(this.lastLevel ?? 30)), line, 'pino');
    },
  } as { write(line: string): void; lastLevel?: number };
}
