import type { Collector } from './collector.js';
import { describeBytes, type BodyData } from './body.js';
import { redactHeaders } from './redact.js';

export interface ResponseData {
  status: number;
  statusMessage: string;
  headers: Record<string, unknown>;
  body: BodyData;
  aborted: boolean;
}

export const response: Collector<ResponseData> = {
  id: 'response',
  title: 'Response',
  collect(ctx, options) {
    const res = ctx.res;
    const headers = res.getHeaders();
    const contentType = headers['content-type'] === undefined ? undefined : String(headers['content-type']);
    const chunks = ctx.bodyChunks;
    const bytes = chunks.length === 1 && Buffer.isBuffer(chunks[0])
      ? chunks[0]
      : Buffer.concat(chunks.map((c) => (typeof c === 'string' ? Buffer.from(c) : c)));
    return {
      status: res.statusCode,
      statusMessage: res.statusMessage,
      headers: redactHeaders(headers, options.redactKeys),
      body: describeBytes(bytes, ctx.bodySize, contentType, options.bodyLimit, options.redactKeys),
      aborted: ctx.aborted,
    };
  },
  badge: (data) => data.status,
};
