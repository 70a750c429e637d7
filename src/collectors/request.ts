import type { CorePanel } from './collector.js';
import { cookieNames, redactHeaders, redactQuery, redactUrl, redactValue } from './redact.js';
import { hostOf, isEmpty, orEmpty, packHeaders, pathOf, unpackHeaders, type DerivedHeaders } from './derive.js';
import { describeBytes, describeParsed, packBody, typeOf, unpackBody, type BodyData, type StoredBody } from './body.js';

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

/** The Host header: the summary's URL was made from it. */
const derivedHeaders: DerivedHeaders = [['host', hostOf]];

export const request: CorePanel<RequestData> = {
  id: 'request',
  title: 'Request',
  collect(s, options) {
    const r = s.request;
    const keys = options.redactKeys;
    const contentType = typeOf(r.headers);
    const cookie = r.headers.cookie;
    return {
      method: r.method,
      url: redactUrl(r.url, keys, s.params),
      httpVersion: r.httpVersion,
      query: redactQuery(r.query, keys),
      body: r.rawBody
        ? describeBytes(r.rawBody, contentType ?? 'text/plain', options.bodyLimit, keys)
        : describeParsed(r.body, r.bodyCut === true, Number(r.headers['content-length']), contentType, options.bodyLimit, keys),
      params: redactValue(s.params, keys),
      headers: redactHeaders(r.headers, keys),
      cookies: cookieNames(cookie === undefined ? undefined : Array.isArray(cookie) ? cookie.join('; ') : String(cookie)),
      server: { remoteAddress: r.remoteAddress, secure: r.secure, pid: process.pid },
    };
  },
  pack(d, summary) {
    const { server, headers, body } = d;
    const given = typeOf(headers);
    const sameAddress = server.remoteAddress === summary.ip;
    packHeaders(headers, derivedHeaders, summary);
    if (body !== undefined) packBody(body, given);
    const stored = d as unknown as Record<string, unknown>;
    if (d.method === summary.method) stored.method = undefined;
    if (d.url === pathOf(summary)) stored.url = undefined;
    if (d.httpVersion === '1.1') stored.httpVersion = undefined;
    for (const key of ['query', 'params', 'cookies'] as const) if (isEmpty(d[key])) stored[key] = undefined;
    (server as { remoteAddress?: string | null }).remoteAddress = sameAddress ? undefined : (server.remoteAddress ?? null);
    (server as { secure?: boolean }).secure = server.secure || undefined;
    return d;
  },
  unpack(s: Partial<Omit<RequestData, 'body' | 'server'>> & Pick<RequestData, 'headers'> & { body?: StoredBody; server: { remoteAddress?: string | null; secure?: true; pid: number } }, summary) {
    const headers = unpackHeaders(s.headers, derivedHeaders, summary);
    const { remoteAddress } = s.server;
    return {
      method: s.method ?? summary.method,
      url: s.url ?? pathOf(summary),
      httpVersion: s.httpVersion ?? '1.1',
      query: orEmpty(s.query),
      body: s.body === undefined ? undefined : unpackBody(s.body, headers),
      params: orEmpty(s.params),
      headers,
      cookies: orEmpty(s.cookies) as Record<string, string>,
      server: { remoteAddress: remoteAddress === undefined ? summary.ip : (remoteAddress ?? undefined), secure: s.server.secure ?? false, pid: s.server.pid },
    };
  },
  badge: (data) => data.method,
};
