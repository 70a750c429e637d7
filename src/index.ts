export { webProfiler, type WebProfiler } from './profiler.js';
export type { Identified, ProfilerOptions } from './options.js';
export type { Collector } from './collectors/collector.js';
export type { RequestContext } from './recording/context.js';
export { logger, type Logger } from './recording/logger.js';
export { span } from './recording/span.js';
export { dump, type Dump } from './recording/dump.js';
export type { ValueNode } from './recording/snapshot-value.js';
export { pinoDestination } from './instruments/pino.js';
export { instrument } from './instruments/index.js';
export { mailTransport } from './instruments/nodemailer.js';
export type { DriverAdapter, PlanRow } from './instruments/driver.js';
export type { LogChannel, LogLine, LogLevel, Span } from './recording/context.js';
export type { Profile, ProfileSummary } from './storage/profile.js';
export { ProfileStore, type SearchFilter } from './storage/store.js';
export type { ExceptionData, ErrorInfo, FrameInfo } from './errors/describe.js';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** The request-scoped logger: its lines land in this request's profile. */
      log: import('./recording/logger.js').Logger;
    }
  }
}
