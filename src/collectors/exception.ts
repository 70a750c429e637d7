import type { ExceptionData } from '../errors/describe.js';
import type { CorePanel } from './collector.js';

/** Described on the request's thread, where the error object lives; its code excerpts were read and its texts redacted as it was stored. */
export const exception: CorePanel<ExceptionData> = {
  id: 'exception',
  title: 'Exception',
  collect: (s) => s.exception,
  badge: (data) => data.chain.length,
};
