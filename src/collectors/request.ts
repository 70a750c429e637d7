import type { CorePanel } from './collector.js';
import { cookieNames } from '../redaction/redact.js';
import { hostOf, orEmpty, pathOf, unpackHeaders, type DerivedHeaders, unpackBody, type StoredBody } from './derive.js';
import type { BodyData } from '../redaction/body.js';
import { sessionView, type SessionView } from './session.js';

export interface RequestData {
  method: string;
  url: string;
  httpVersion: string;
  query: unknown;
  body?: BodyData;
  params: unknown;
  headers: Record<string, unknown>;
  cookies: Record<string, string>;
  /** express-session's or cookie-session's: see SessionView. */
  session?: SessionView;
  server: {
    remoteAddress?: string;
    secure: boolean;
    pid: number;
  };
}

/** The Host header: the summary's URL was made from it. */
const derivedHeaders: DerivedHeaders = [['host', hostOf]];

/** A parsed body is a form's fields where its content type says so: the page and the JSON twin say the same. */
const formOrJson = (body: BodyData): BodyData => (body.kind === 'json' && /x-www-form-urlencoded/i.test(body.contentType ?? '') ? { ...body, kind: 'form' } : body);

export const request: CorePanel<RequestData> = {
  id: 'request',
  title: 'Request',
  collect(s) {
    if (s.command !== undefined) return undefined;
    const r = s.request;
    const cookie = r.headers.cookie;
    return {
      method: r.method,
      url: r.url,
      httpVersion: r.httpVersion,
      query: r.query,
      body: r.body && formOrJson(r.body),
      params: s.params,
      headers: r.headers,
      cookies: cookieNames(cookie === undefined ? undefined : Array.isArray(cookie) ? cookie.join('; ') : String(cookie)),
      ...(s.session === undefined ? {} : { session: sessionView(s.session) }),
      server: { remoteAddress: r.remoteAddress, secure: r.secure, pid: s.pid },
    };
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
