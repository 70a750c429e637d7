import type { CorePanel } from './collector.js';
import { describeBytes, type BodyData } from './body.js';
import { redactHeaders } from './redact.js';

export interface ResponseData {
  status: number;
  statusMessage: string;
  headers: Record<string, unknown>;
  body: BodyData;
  aborted: boolean;
}

export const response: CorePanel<ResponseData> = {
  id: 'response',
  title: 'Response',
  collect(s, options) {
    const r = s.response;
    const contentType = r.headers['content-type'] === undefined ? undefined : String(r.headers['content-type']);
    return {
      status: r.status,
      statusMessage: r.statusMessage,
      headers: redactHeaders(r.headers, options.redactKeys),
      body: describeBytes(r.body, contentType, options.bodyLimit, options.redactKeys),
      aborted: s.aborted,
    };
  },
  badge: (data) => data.status,
};
