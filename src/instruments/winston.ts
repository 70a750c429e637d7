import Transport from 'winston-transport';
import { currentContext, type LogLevel, type RequestContext } from '../recording/context.js';
import { addLine } from '../recording/logger.js';

const LEVEL = Symbol.for('level');
const MESSAGE = Symbol.for('message');
/** The request a line was logged in, stamped when the app logs it. */
const kRequest = Symbol('web-profiler.request');

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

interface Info {
  [key: string | symbol]: unknown;
  level?: unknown;
  message?: unknown;
}

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
    const ctx = (info[kRequest] as RequestContext | undefined) ?? currentContext();
    if (ctx !== undefined) {
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
    next();
  }
}


export const profilerTransport = (options?: Transport.TransportStreamOptions): ProfilerTransport => new ProfilerTransport(options);
