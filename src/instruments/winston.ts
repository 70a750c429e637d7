import Transport from 'winston-transport';
import { currentContext, type WorkContext } from '../recording/context.js';
import { recordLine, winstonRecorded, type Info } from './winston-writes.js';

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
  const write = l.write;
  l.write = function (this: unknown, info: unknown, ...rest: unknown[]) {
    if (info !== null && typeof info === 'object' && !(kRequest in info)) {
      const ctx = currentContext();
      // Not enumerable: formats that copy the line (Object.assign, JSON) leave it out.
      if (ctx !== undefined) Object.defineProperty(info, kRequest, { value: ctx, configurable: true });
    }
    return write.call(this, info, ...rest);
  };
}

/**
 * A winston transport that puts each line into the profile of the request that logged it:
 * `winston.createLogger({ transports: [new winston.transports.Console(), profilerTransport()] })`.
 * Lines logged outside a request are not kept. What the logger's other transports write is
 * unchanged.
 */
export class ProfilerTransport extends Transport {
  constructor(options?: Transport.TransportStreamOptions) {
    super(options);
    this.on('pipe', stampWrites);
  }

  override log(info: Info, next: () => void): void {
    // A winston the profiler found records each line itself, as it is written: then this adds nothing.
    const ctx = winstonRecorded() ? undefined : ((info[kRequest] as WorkContext | undefined) ?? currentContext());
    if (ctx !== undefined) recordLine(ctx, info);
    next();
  }
}


export const profilerTransport = (options?: Transport.TransportStreamOptions): ProfilerTransport => new ProfilerTransport(options);
