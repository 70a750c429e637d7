import Transport from 'winston-transport';
import { currentContext, type WorkContext } from '../recording/context.js';
import { recordLine, writesRecorded, type Info } from './winston-writes.js';

/** The request a line was logged in, stamped when the app logs it. */
const kRequest = Symbol('web-profiler.request');

const stamped = new WeakSet<object>();

/**
 * winston is a stream pipeline: a transport may run its log() late, for a line of another request
 * (a slow transport backs the pipeline up, and buffered lines are written in whatever callback
 * drains them). So the line is stamped with its request where the app logs it, in the logger's
 * write(), and the transport reads the stamp.
 */
function stampWrites(logger: unknown): void {
  const l = logger as { write?: (...args: unknown[]) => unknown } | null;
  if (l === null || typeof l !== 'object' || typeof l.write !== 'function' || stamped.has(l)) return;
  stamped.add(l);
  // The logger's own write if it has one; else its class's, looked up at each line: the profiler
  // may hook that one after this logger was made (it records there, and this transport then not).
  const own = Object.hasOwn(l, 'write') ? l.write : undefined;
  const proto = Object.getPrototypeOf(l) as { write: (...args: unknown[]) => unknown };
  l.write = function (this: unknown, info: unknown, ...rest: unknown[]) {
    if (info !== null && typeof info === 'object' && !(kRequest in info)) {
      const ctx = currentContext();
      // Not enumerable: formats that copy the line (Object.assign, JSON) leave it out.
      if (ctx !== undefined) Object.defineProperty(info, kRequest, { value: ctx, configurable: true });
    }
    return (own ?? proto.write).call(this, info, ...rest);
  };
}

/**
 * A winston transport that puts each line into the profile of the request that logged it:
 * `winston.createLogger({ transports: [new winston.transports.Console(), profilerTransport()] })`.
 * Lines logged outside a request are not kept. What the logger's other transports write is
 * unchanged.
 */
export class ProfilerTransport extends Transport {
  /** The loggers that write to it (winston pipes each into its transports). */
  private readonly sources = new Set<object>();

  constructor(options?: Transport.TransportStreamOptions) {
    super(options);
    this.on('pipe', (logger: object) => {
      this.sources.add(logger);
      stampWrites(logger);
    });
    this.on('unpipe', (logger: object) => this.sources.delete(logger));
  }

  override log(info: Info, next: () => void): void {
    // Where the profiler found the logger's own winston, it records each line as it is written, and
    // this adds nothing; a logger of another copy of winston (the app's own, one the profiler did
    // not find) is recorded here. Asked at each line: the profiler may find a winston after the
    // logger was made.
    const ctx = this.recordedElsewhere() ? undefined : ((info[kRequest] as WorkContext | undefined) ?? currentContext());
    if (ctx !== undefined) recordLine(ctx, info);
    next();
  }

  private recordedElsewhere(): boolean {
    if (this.sources.size === 0) return false;
    for (const logger of this.sources) if (!writesRecorded(logger)) return false;
    return true;
  }
}


export const profilerTransport = (options?: Transport.TransportStreamOptions): ProfilerTransport => new ProfilerTransport(options);
