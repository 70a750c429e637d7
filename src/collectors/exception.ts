import { addExcerpts, redactException, withSentStatus, type ExceptionData } from '../errors/describe.js';
import type { CorePanel } from './collector.js';

/**
 * Described on the request's thread, where the error object lives; its code excerpts are read
 * here, off that thread, and its texts redacted (messages quote what the app was given).
 */
export const exception: CorePanel<ExceptionData> = {
  id: 'exception',
  title: 'Exception',
  collect(s, options) {
    if (!s.exception) return undefined;
    addExcerpts(s.exception);
    return withSentStatus(redactException(s.exception, options.redactKeys), s.response.status);
  },
  badge: (data) => data.chain.length,
};
