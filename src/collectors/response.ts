import { STATUS_CODES } from 'node:http';
import type { CorePanel } from './collector.js';
import type { BodyData } from '../redaction/body.js';
import { layerParts } from '../recording/checks.js';
import { httpDate } from '../redaction/record.js';
import { linkOf, unpackHeaders, type DerivedHeaders, unpackBody, type StoredBody } from './derive.js';

export interface ResponseData {
  status: number;
  statusMessage: string;
  headers: Record<string, unknown>;
  body: BodyData;
  aborted: boolean;
  /** The app's line that sent a 4xx or 5xx no exception explains. */
  answeredAt?: string[];
  /** The middleware that was running then, and where the app mounted it. */
  answeredBy?: { name: string; at?: string };
}

export const response: CorePanel<ResponseData> = {
  id: 'response',
  title: 'Response',
  collect(s) {
    if (s.command !== undefined) return undefined;
    const r = s.response;
    return { status: r.status, statusMessage: r.statusMessage, headers: r.headers, body: r.body, aborted: s.aborted, ...(r.answeredAt === undefined || r.answeredAt.length === 0 ? {} : { answeredAt: r.answeredAt }), ...(r.answeredBy === undefined ? {} : { answeredBy: layerParts(r.answeredBy) }) };
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
