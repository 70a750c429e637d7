import type { Request } from 'express';
import type { TLSSocket } from 'node:tls';
import type { Collector } from './collector.js';
import { describeParsed, type BodyData } from './body.js';
import { plain } from './plain.js';
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

export const request: Collector<RequestData> = {
  id: 'request',
  title: 'Request',
  collect(ctx, options) {
    const req = ctx.req as Request;
    const keys = options.redactKeys;
    let query: unknown;
    try {
      query = redactValue(plain(req.query), keys);
    } catch (err) {
      query = { '[unparsable query]': String(err) };
    }
    return {
      method: req.method,
      url: redactText(req.originalUrl ?? req.url ?? '/', keys),
      httpVersion: req.httpVersion,
      query,
      body: describeParsed(req.body, req.headers['content-type'], options.bodyLimit, keys),
      params: redactValue(plain(ctx.params ?? {}), keys),
      headers: redactHeaders(req.headers, keys),
      cookies: cookieNames(req.headers.cookie),
      server: {
        remoteAddress: ctx.remoteAddress,
        secure: Boolean((req.socket as TLSSocket | undefined)?.encrypted),
        pid: process.pid,
      },
    };
  },
  badge: (data) => data.method,
};
