import dc from 'node:diagnostics_channel';
import http, { type ClientRequest, type IncomingMessage } from 'node:http';
import https from 'node:https';
import { syncBuiltinESMExports } from 'node:module';
import type { WorkContext } from '../recording/context.js';
import { callerFrame } from '../recording/caller.js';
import { isLoopbackHost } from '../recording/url.js';
import { insideOf, MAX_QUERIES, requestOf, sinceStart, type CallEntry } from '../recording/inside.js';

/** Sent on calls to loopback hosts (and the app's linkHosts): the called app's profile links back to this one. */
export const PARENT_HEADER = 'X-Debug-Parent-Token';
/** And where that profile is: the called app may be another server. */
export const PARENT_LINK_HEADER = 'X-Debug-Parent-Link';

/** A command has no address of its own: its token alone names it, in the store it shares. */
const parentLink = (ctx: WorkContext): string | undefined => ('origin' in ctx ? `${ctx.origin}/_profiler/${ctx.token}` : undefined);

interface Open {
  ctx: WorkContext;
  entry: CallEntry;
}

const open = new WeakMap<object, Open>();

/** Whether a call to `host` (a name, maybe with a port) carries the parent token. */
function linked(ctx: WorkContext, host: string): boolean {
  const name = host.replace(/:\d+$/, '').toLowerCase();
  return isLoopbackHost(name) || ctx.recorder.linkHosts.includes(name);
}

/** A URL as it is shown and stored: without user name or password. */
function withoutCredentials(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@?#]*@/i, '$1');
}

function started(ctx: WorkContext, api: CallEntry['api'], method: string, url: string, caller: string | undefined): CallEntry | undefined {
  const inside = insideOf(ctx);
  inside.callCount++;
  if (inside.calls.length >= MAX_QUERIES) return undefined;
  const entry: CallEntry = {
    api, method, url: withoutCredentials(url), start: sinceStart(ctx), end: -1, status: undefined, error: undefined,
    requestHeaders: undefined, responseHeaders: undefined, requestSize: undefined, responseSize: undefined, caller,
  };
  inside.calls.push(entry);
  return entry;
}

function ended(request: object, error?: unknown): void {
  const call = open.get(request);
  if (call === undefined) return;
  open.delete(request);
  if (call.entry.end < 0) call.entry.end = sinceStart(call.ctx);
  if (error !== undefined) call.entry.error = error;
}

/** undici's headers: [name, value, ...] as strings or Buffers (or, in undici 5, one "name: value\r\n" string). */
function undiciHeaders(raw: unknown): Record<string, string | string[]> {
  const headers = Object.create(null) as Record<string, string | string[]>;
  const add = (name: string, value: string) => {
    const key = name.toLowerCase();
    const seen = headers[key];
    headers[key] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
  };
  if (typeof raw === 'string') {
    for (const line of raw.split('\r\n')) {
      const colon = line.indexOf(':');
      if (colon > 0) add(line.slice(0, colon), line.slice(colon + 1).trim());
    }
  } else if (Array.isArray(raw)) {
    for (let i = 0; i + 1 < raw.length; i += 2) add(String(raw[i]), String(raw[i + 1]));
  }
  return headers;
}

const sizeOf = (headers: Record<string, unknown>): number | undefined => {
  const length = Number(headers['content-length']);
  return Number.isFinite(length) && length >= 0 ? length : undefined;
};

interface UndiciRequest {
  origin: string | URL;
  method: string;
  path: string;
  headers: unknown;
  addHeader?(name: string, value: string): unknown;
}

function onUndiciCreate(message: unknown): void {
  const { request } = message as { request: UndiciRequest };
  const ctx = requestOf();
  if (ctx === undefined) return;
  const origin = String(request.origin).replace(/\/$/, '');
  // No caller line: fetch creates its request after awaits of its own, where no frame of the app's is left.
  const entry = started(ctx, 'fetch', request.method, origin + request.path, undefined);
  if (entry === undefined) return;
  let host = '';
  try {
    host = new URL(origin).host;
  } catch {
    // An origin undici accepted but URL does not: no link is sent.
  }
  if (host && linked(ctx, host) && typeof request.addHeader === 'function') {
    request.addHeader(PARENT_HEADER, ctx.token);
    const link = parentLink(ctx);
    if (link !== undefined) request.addHeader(PARENT_LINK_HEADER, link);
  }
  const headers = undiciHeaders(request.headers);
  entry.requestHeaders = headers;
  entry.requestSize = sizeOf(headers);
  open.set(request, { ctx, entry });
}

function onUndiciHeaders(message: unknown): void {
  const { request, response } = message as { request: object; response: { statusCode: number; headers: unknown } };
  const call = open.get(request);
  if (call === undefined) return;
  call.entry.status = response.statusCode;
  const headers = undiciHeaders(response.headers);
  call.entry.responseHeaders = headers;
  call.entry.responseSize = sizeOf(headers);
}

/** A node:http request the app has just made, its headers not yet sent. */
function onHttpCreated(request: ClientRequest): void {
  if (open.has(request)) return;
  const ctx = requestOf();
  if (ctx === undefined) return;
  const host = String(request.getHeader('host') ?? request.host ?? '');
  const entry = started(ctx, 'http', request.method, `${request.protocol}//${host}${request.path}`, callerFrame());
  if (entry === undefined) return;
  open.set(request, { ctx, entry });
  try {
    if (!request.headersSent && linked(ctx, host) && !request.hasHeader(PARENT_HEADER)) {
      request.setHeader(PARENT_HEADER, ctx.token);
      const link = parentLink(ctx);
      if (link !== undefined) request.setHeader(PARENT_LINK_HEADER, link);
    }
  } catch {
    // Headers the app gave as a raw array are fixed already: the call goes out as it was.
  }
}

function onHttpStart(message: unknown): void {
  const { request } = message as { request: ClientRequest };
  onHttpCreated(request);
  const call = open.get(request);
  if (call === undefined) return;
  const headers = request.getHeaders();
  call.entry.requestHeaders = headers;
  call.entry.requestSize = sizeOf(headers);
}

function onHttpResponse(message: unknown): void {
  const { request, response } = message as { request: ClientRequest; response: IncomingMessage };
  const call = open.get(request);
  if (call === undefined) return;
  call.entry.status = response.statusCode;
  call.entry.responseHeaders = { ...response.headers };
  call.entry.responseSize = sizeOf(response.headers);
  ended(request);
}

/** Node 22.12 and later tell of a request before its headers go out; older ones only after. */
const [major, minor] = process.versions.node.split('.').map(Number);
const announcesCreated = major > 23 || (major === 23 && minor >= 2) || (major === 22 && minor >= 12);

let subscribed = false;

/**
 * Record outgoing HTTP calls through the channels fetch (undici) and node:http publish. On Node
 * older than 22.12, whose node:http announces a request only once its headers are sent, the
 * exported http(s).request and .get are wrapped so that the parent token can go with it and the
 * caller's line be seen; nothing else about them changes.
 */
export function recordHttpCalls(tell: (message: string) => void): void {
  if (subscribed) return;
  subscribed = true;
  // What a subscriber throws, Node rethrows as an uncaught exception: the app's process would die of the profiler's trouble.
  const on = (channel: string, fn: (message: unknown) => void) => dc.subscribe(channel, (message) => {
    try {
      fn(message);
    } catch (err) {
      tell(`recording an HTTP call failed: ${(err as Error)?.message ?? err}`);
    }
  });
  on('undici:request:create', onUndiciCreate);
  on('undici:request:headers', onUndiciHeaders);
  on('undici:request:trailers', (m) => ended((m as { request: object }).request));
  on('undici:request:error', (m) => ended((m as { request: object }).request, (m as { error: unknown }).error));
  on('http.client.request.start', onHttpStart);
  on('http.client.response.finish', onHttpResponse);
  on('http.client.request.error', (m) => ended((m as { request: object }).request, (m as { error: unknown }).error));
  if (announcesCreated) {
    on('http.client.request.created', (m) => onHttpCreated((m as { request: ClientRequest }).request));
    return;
  }
  for (const mod of [http, https] as unknown as Record<string, (...args: unknown[]) => ClientRequest>[]) {
    const request0 = mod.request;
    const created = (req: ClientRequest) => {
      try {
        onHttpCreated(req);
      } catch (err) {
        tell(`recording an HTTP call failed: ${(err as Error)?.message ?? err}`);
      }
    };
    mod.request = function request(this: unknown, ...args: unknown[]) {
      const req = request0.apply(this, args);
      created(req);
      return req;
    };
    // What http.get does, around the request it makes.
    mod.get = function get(this: unknown, ...args: unknown[]) {
      const req = request0.apply(this, args);
      created(req);
      req.end();
      return req;
    };
  }
  syncBuiltinESMExports();
}
