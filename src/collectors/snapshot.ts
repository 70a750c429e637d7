import type { ExceptionData } from '../errors/describe.js';
import type { Captured } from '../recording/capture.js';
import type { LogLine, Span } from '../recording/context.js';
import type { CpuState } from '../recording/cpu.js';
import type { CommandState } from '../recording/command.js';
import type { LoopState } from '../recording/loop.js';
import type { Check } from '../recording/checks.js';
import type { Dump } from '../recording/dump.js';
import type { CapturedTranslations } from '../recording/capture.js';
import { spansOf } from '../recording/layers.js';
import type { BodyData } from '../redaction/body.js';
import { setOwn } from '../recording/plain.js';
import { STATUS_CODES } from 'node:http';
import { DERIVED, headLines, httpDate, type ProfileRecord, type RecordedInside } from '../redaction/record.js';
import { typeOf } from '../redaction/body.js';
import { hostOf, linkOf, pathOf } from './derive.js';
import { redactHeaders } from '../redaction/redact.js';
import type { ProfileSummary } from '../storage/profile.js';
import type { StoredSession, Who } from '../redaction/who.js';

/**
 * A stored request as the panels read it: the record with its summary put back, headers as
 * objects, the router's trail as spans. Everything in it was redacted when it was stored.
 */
export interface Snapshot extends Pick<Captured, 'token' | 'parent' | 'time' | 'duration' | 'ttfb' | 'rss' | 'aborted' | 'ip'> {
  /** scheme://host/path?query as the client asked for it. */
  url: string;
  request: {
    method: string;
    url: string;
    httpVersion: string;
    headers: Record<string, unknown>;
    query: unknown;
    body?: BodyData;
    secure: boolean;
    remoteAddress?: string;
  };
  response: {
    status: number;
    statusMessage: string;
    headers: Record<string, unknown>;
    body: BodyData;
    /** The app's line that sent a failure no exception explains. */
    answeredAt?: string[];
    /** The router layer that was running then: its name, a tab, the app's line that mounted it. */
    answeredBy?: string;
  };
  route?: string;
  params: unknown;
  spans: Span[];
  logs: LogLine[];
  logsDropped: number;
  exception?: ExceptionData;
  inside?: RecordedInside;
  cpu?: CpuState;
  /** The process that served it, and its config (see recording/process-config.ts). */
  pid: number;
  config?: unknown;
  /** The app's own panels, collected on the request's thread (they may read req and res). */
  extra: Record<string, unknown>;
  extraErrors?: Record<string, string>;
  /** A command's name, arguments and exit code: set for a profile of type `command` only. */
  command?: CommandState;
  trace?: { traceId: string; spanId: string };
  loop?: LoopState;
  checks?: Check[];
  dumps: Dump[];
  dumpsDropped: number;
  translations?: CapturedTranslations;
  who?: Who;
  session?: StoredSession;
}

/**
 * The Snapshot the panels read, from a stored record. Headers go through redaction once more
 * (it changes nothing already redacted): repeats read back as Node's header objects show them.
 */
export function snapshotOf(r: ProfileRecord, summary: ProfileSummary, config: unknown, keys: string[]): Snapshot {
  const responseHeaders = typeof r.head === 'string' ? headersOf(headLines(r.head)) : r.head;
  for (const [name, derive] of DERIVED_HEADERS) if (responseHeaders[name] === DERIVED) responseHeaders[name] = derive(summary);
  const rawHeaders = r.rawHeaders;
  for (let i = 1; i < rawHeaders.length; i += 2) if (rawHeaders[i] === DERIVED && rawHeaders[i - 1].toLowerCase() === 'host') rawHeaders[i] = hostOf(summary);
  const requestHeaders = redactHeaders(headersFrom(rawHeaders), keys);
  return {
    token: summary.token,
    parent: summary.parent,
    time: summary.time,
    duration: summary.duration,
    ttfb: r.ttfb,
    rss: r.rss,
    aborted: r.aborted === true,
    ip: summary.ip,
    url: summary.url,
    request: {
      method: summary.method,
      url: r.url ?? pathOf(summary),
      httpVersion: r.httpVersion ?? '1.1',
      headers: requestHeaders,
      query: r.query ?? {},
      body: r.requestBody && bodyOf(r.requestBody, typeOf(requestHeaders)),
      secure: r.secure === true,
      remoteAddress: r.remoteAddress === undefined ? summary.ip : (r.remoteAddress ?? undefined),
    },
    response: {
      status: summary.status,
      statusMessage: r.statusMessage === undefined ? STATUS_CODES[summary.status]! : (r.statusMessage ?? undefined)!,
      headers: redactHeaders(responseHeaders, keys),
      body: bodyOf(r.responseBody, typeOf(responseHeaders)),
      answeredAt: r.answeredAt,
      answeredBy: r.answeredBy,
    },
    route: r.route,
    params: r.params ?? {},
    spans: spansOf(r.trail, summary.duration),
    logs: r.logs ?? [],
    logsDropped: r.logsDropped ?? 0,
    exception: r.exception,
    inside: r.inside,
    cpu: r.cpu,
    pid: (config as { pid?: number } | undefined)?.pid ?? 0,
    config,
    extra: r.extra ?? {},
    extraErrors: r.extraErrors,
    command: r.command,
    trace: r.trace,
    loop: r.loop,
    checks: r.checks,
    dumps: r.dumps ?? [],
    dumpsDropped: r.dumpsDropped ?? 0,
    translations: r.translations,
    who: r.who,
    session: r.session,
  };
}

/** The headers a record leaves DERIVED, and how the summary gives them back. */
const DERIVED_HEADERS: [string, (summary: ProfileSummary) => string][] = [
  ['x-debug-token', (summary) => summary.token],
  ['x-debug-token-link', linkOf],
  ['x-robots-tag', () => 'noindex'],
  ['date', (summary) => httpDate(summary.time)],
];

/** A body as described when it was stored: its content type is its message's unless it says another. */
function bodyOf(stored: BodyData, given: string | undefined): BodyData {
  const { size, kind, json, text, truncated, encoding, unparsed } = stored;
  const contentType = Object.hasOwn(stored, 'contentType') ? stored.contentType : given;
  // In the order describeBytes() gives them.
  const body: BodyData = { size, contentType, kind, ...(json !== undefined ? { json } : {}), ...(text !== undefined ? { text } : {}), truncated: truncated ?? false };
  if (encoding !== undefined) body.encoding = encoding;
  if (unparsed !== undefined) body.unparsed = unparsed;
  return body;
}

/** The headers of a response head ("HTTP/1.1 200 OK\r\nName: value\r\n...\r\n\r\n"), names in lower case, repeats as arrays. */
function headersOf(head: string): Record<string, unknown> {
  const headers: Record<string, unknown> = {};
  // Read in place, line by line after the status line: no array of lines, no array of pairs.
  for (let at = head.indexOf('\r\n') + 2; at > 1 && at < head.length;) {
    const end = head.indexOf('\r\n', at);
    const stop = end < 0 ? head.length : end;
    const colon = head.indexOf(':', at);
    if (colon > at && colon < stop) addHeader(headers, head.slice(at, colon).toLowerCase(), head.slice(colon + 1, stop).trim());
    at = stop + 2;
  }
  return headers;
}

/** Headers from [name, value, name, value, ...]: names in lower case, repeats as arrays. */
function headersFrom(pairs: string[]): Record<string, unknown> {
  const headers: Record<string, unknown> = {};
  for (let i = 0; i + 1 < pairs.length; i += 2) addHeader(headers, String(pairs[i]).toLowerCase(), String(pairs[i + 1]));
  return headers;
}

/** One header into `headers`, as an own property, so that `constructor` or `__proto__` are headers like any other. */
function addHeader(headers: Record<string, unknown>, name: string, value: string): void {
  const seen = headers[name];
  if (seen === undefined || !Object.hasOwn(headers, name)) setOwn(headers, name, value);
  else if (Array.isArray(seen)) seen.push(value);
  else headers[name] = [seen, value];
}
