import { describeException, type ExceptionData } from '../errors/describe.js';
import type { Collector } from './collector.js';

export const exception: Collector<ExceptionData> = {
  id: 'exception',
  title: 'Exception',
  collect: (ctx) => (ctx.error === undefined ? undefined : describeException(ctx.error)),
  badge: (data) => data.chain.length,
};
