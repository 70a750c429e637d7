import { STATUS_CODES } from 'node:http';
import type { CorePanel } from './collector.js';
import { describeBytes, packBody, typeOf, unpackBody, type BodyData, type StoredBody } from './body.js';
import { httpDate, linkOf, packHeaders, unpackHeaders, type DerivedHeaders } from './derive.js';
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
    return {
      status: r.status,
      statusMessage: r.statusMessage,
      headers: redactHeaders(r.headers, options.redactKeys),
      body: describeBytes(r.body, typeOf(r.headers), options.bodyLimit, options.redactKeys, r.headers['content-encoding']),
      aborted: s.aborted,
    };
  },
  pack(d, summary) {
    const given = typeOf(d.headers);
    const sameMessage = d.statusMessage === STATUS_CODES[d.status];
    packHeaders(d.headers, derivedHeaders, summary);
    packBody(d.body, given);
    const stored = d as unknown as Record<string, unknown>;
    stored.statusMessage = sameMessage ? undefined : (d.statusMessage ?? null);
    if (d.status === summary.status) stored.status = undefined;
    if (!d.aborted) stored.aborted = undefined;
    return d;
  },
  unpack(s: Omit<ResponseData, 'status' | 'statusMessage' | 'aborted' | 'body'> & { status?: number; statusMessage?: string | null; aborted?: true; body: StoredBody }, summary) {
    const status = s.status ?? summary.status;
    const headers = unpackHeaders(s.headers, derivedHeaders, summary);
    return {
      status,
      statusMessage: s.statusMessage === undefined ? STATUS_CODES[status]! : (s.statusMessage ?? undefined)!,
      headers,
      body: unpackBody(s.body, headers),
      aborted: s.aborted ?? false,
    };
  },
  badge: (data) => data.status,
};

/** The response headers the recorder adds, and Date, with their usual values. */
const derivedHeaders: DerivedHeaders = [
  ['x-debug-token', (summary) => summary.token],
  ['x-debug-token-link', linkOf],
  ['x-robots-tag', () => 'noindex'],
  // Node's Date header is the time the head went out, to the second: most often the arrival's second.
  ['date', (summary) => httpDate(summary.time)],
];
