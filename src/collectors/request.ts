import type { CorePanel } from './collector.js';
import { describeBytes, describeParsed, type BodyData } from './body.js';
import { cookieNames, redactHeaders, redactText, redactValue } from './redact.js';

export interface RequestData {
  method: string;
  url: string;
  httpVersion: string;
  query: unknown;
  body?: BodyData;
  params: unknown;
  headers: Record<string, unknown>;
  cookies: Record<string, string>;
  server: {
    remoteAddress?: string;
    secure: boolean;
    pid: number;
  };
}

export const request: CorePanel<RequestData> = {
  id: 'request',
  title: 'Request',
  collect(s, options) {
    const r = s.request;
    const keys = options.redactKeys;
    const contentType = r.headers['content-type'] === undefined ? undefined : String(r.headers['content-type']);
    const cookie = r.headers.cookie;
    return {
      method: r.method,
      url: redactText(r.url, keys),
      httpVersion: r.httpVersion,
      query: redactValue(r.query, keys),
      body: r.rawBody
        ? describeBytes(r.rawBody, contentType ?? 'text/plain', options.bodyLimit, keys)
        : describeParsed(r.body, r.bodyCut === true, Number(r.headers['content-length']), contentType, options.bodyLimit, keys),
      params: redactValue(s.params, keys),
      headers: redactHeaders(r.headers, keys),
      cookies: cookieNames(cookie === undefined ? undefined : Array.isArray(cookie) ? cookie.join('; ') : String(cookie)),
      server: { remoteAddress: r.remoteAddress, secure: r.secure, pid: process.pid },
    };
  },
  badge: (data) => data.method,
};
