import type { Request } from 'express';
import type { TLSSocket } from 'node:tls';
import type { Collector } from '../collectors/collector.js';
import { collectEach } from '../collectors/build.js';
import { plain } from '../collectors/plain.js';
import { describeException, type ExceptionData } from '../errors/describe.js';
import type { ResolvedOptions } from '../options.js';
import type { LogLine, RequestContext, Span } from './context.js';
import { spansOf } from './layers.js';

/** A body kept as bytes: at most bodyLimit + 1 of them (enough to tell it was cut), and its full size. */
export interface RawBody {
  bytes: Uint8Array | string;
  size: number;
}

/**
 * A finished request as plain data: what the writer thread needs to build every core panel, with
 * no reference to req, res or the app. Nothing here is redacted yet; the writer redacts before
 * anything is stored.
 */
export interface Snapshot {
  token: string;
  parent: string | null;
  time: number;
  duration: number;
  ttfb: number;
  rss: number;
  aborted: boolean;
  ip: string;
  /** scheme://host/path?query as the client asked for it. */
  url: string;
  request: {
    method: string;
    url: string;
    httpVersion: string;
    headers: Record<string, unknown>;
    query: unknown;
    /** What a body parser made of the body (req.body), when it is not bytes or text. */
    body?: unknown;
    rawBody?: RawBody;
    secure: boolean;
    remoteAddress?: string;
  };
  response: {
    status: number;
    statusMessage: string;
    headers: Record<string, unknown>;
    body: RawBody;
  };
  route?: string;
  params: unknown;
  spans: Span[];
  logs: LogLine[];
  exception?: ExceptionData;
  /** The app's own panels, collected on the request's thread (they may read req and res). */
  extra: Record<string, unknown>;
  extraErrors?: Record<string, string>;
}

/**
 * Read a finished request into a Snapshot. Runs on the request's thread once per request, so it
 * copies references and cuts bodies, and leaves parsing and redaction to the writer.
 */
export function capture(ctx: RequestContext, own: Collector[], options: ResolvedOptions, tell: (message: string) => void): Snapshot {
  const req = ctx.req as Request;
  const res = ctx.res;
  const limit = options.bodyLimit;
  const url = req.originalUrl ?? req.url ?? '/';
  const snapshot: Snapshot = {
    token: ctx.token,
    parent: ctx.parent,
    time: ctx.time,
    duration: ctx.end,
    ttfb: ctx.ttfb,
    rss: ctx.rss,
    aborted: ctx.aborted,
    ip: ipOf(req, ctx.remoteAddress),
    url: ctx.origin + url,
    request: {
      method: req.method ?? 'GET',
      url,
      httpVersion: req.httpVersion,
      headers: req.headers,
      query: url.includes('?') ? queryOf(req) : {},
      secure: Boolean((req.socket as TLSSocket | undefined)?.encrypted),
      remoteAddress: ctx.remoteAddress,
    },
    response: {
      status: res.statusCode,
      statusMessage: res.statusMessage,
      headers: res.getHeaders(),
      body: bodyOf(ctx.bodyChunks, ctx.bodySize, limit),
    },
    route: ctx.route,
    params: ctx.params ?? {},
    spans: spansOf(ctx.trail, ctx.end),
    logs: ctx.logs,
    exception: ctx.error === undefined ? undefined : describeException(ctx.error),
    extra: {},
  };
  const body = req.body as unknown;
  if (typeof body === 'string') snapshot.request.rawBody = { bytes: cut(body, limit), size: Buffer.byteLength(body) };
  else if (Buffer.isBuffer(body)) snapshot.request.rawBody = { bytes: cut(body, limit), size: body.length };
  else if (body !== undefined) snapshot.request.body = body;
  const failed = collectEach(own, (collector) => collector.collect(ctx, options), snapshot.extra, tell);
  if (failed) snapshot.extraErrors = failed;
  return snapshot;
}

/**
 * The same snapshot with every value an app handed us (bodies, query, params, log context, its
 * own panels) made plain: for the rare snapshot that holds something a thread cannot be sent,
 * such as a function or a socket.
 */
export function sendable(s: Snapshot): Snapshot {
  return {
    ...s,
    request: { ...s.request, query: plain(s.request.query), body: plain(s.request.body) },
    params: plain(s.params),
    logs: s.logs.map((line) => (line.context === undefined ? line : { ...line, context: plain(line.context) })),
    extra: plain(s.extra) as Record<string, unknown>,
  };
}

/** The kept response chunks as one value: a lone string stays a string, bytes become one exact copy. */
function bodyOf(chunks: (Buffer | string)[], size: number, limit: number): RawBody {
  if (chunks.length === 1) return { bytes: cut(chunks[0], limit), size };
  return { bytes: cut(Buffer.concat(chunks.map((c) => (typeof c === 'string' ? Buffer.from(c) : c))), limit), size };
}

/**
 * The first limit + 1 characters or bytes: enough to show, and to tell the body was cut. Bytes
 * are copied: a Buffer is often a view on an 8 KiB shared slab, which a thread message would copy whole.
 */
const cut = (value: string | Buffer, limit: number): string | Uint8Array =>
  typeof value === 'string' ? value.slice(0, limit + 1) : new Uint8Array(value.subarray(0, limit + 1));

/** Without X-Forwarded-For, req.ip (and its trust-proxy walk) can only be the peer's address. */
function ipOf(req: Request, remoteAddress: string | undefined): string {
  const ip = req.headers['x-forwarded-for'] === undefined ? remoteAddress : safe(() => req.ip, remoteAddress);
  return ip ?? 'unknown';
}

/** Express 5 parses req.query anew on each read, so a URL without a query skips it. */
function queryOf(req: Request): unknown {
  try {
    return req.query;
  } catch (err) {
    return { '[unparsable query]': String(err) };
  }
}

function safe<T>(fn: () => T, fallback: T): T {
  try {
    return fn();
  } catch {
    return fallback;
  }
}
