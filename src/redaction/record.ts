import { STATUS_CODES } from 'node:http';
import { addExcerpts, withSentStatus, type ExceptionData } from '../errors/describe.js';
import type { Captured } from '../recording/capture.js';
import type { LogLine } from '../recording/context.js';
import type { CpuState } from '../recording/cpu.js';
import type { CommandState } from '../recording/command.js';
import type { LoopState } from '../recording/loop.js';
import type { CapturedInside, CapturedQuery } from '../recording/inside-capture.js';
import { describeBytes, describeParsed, rawOf, type BodyData } from './body.js';
import { redactedLine } from './log-line.js';
import { setOwn } from '../recording/plain.js';
import { hide, looksLikeToken, noting, type HiddenValues } from './hidden.js';
import { isSecretKey, REDACTED, redactHeaders, redactHeaderValue, redactQuery, redactText, redactUrl, redactValue } from './redact.js';
import { RequestSecrets } from './request-secrets.js';
import { redactStatement, type RedactedStatement } from './sql.js';
import { redactArgs, redactCommand } from './commands.js';
import { redactMail, type StoredMail } from './mail.js';
import { storedAiCall, type StoredAiCall } from './ai.js';
import { graphqlLabel, graphqlOperations } from './graphql.js';
import { redactChecks } from './checks.js';
import type { Check } from '../recording/checks.js';
import type { Dump } from '../recording/dump.js';
import { redactDumps } from './dumps.js';
import { storedSession, userLabel, whoOf, type StoredSession, type Who } from './who.js';
import { handlerNamed } from '../recording/handler-name.js';
import type { CapturedTranslations } from '../recording/capture.js';

export interface RecordOptions {
  redactKeys: string[];
  bodyLimit: number;
}

/** A statement as stored: redacted, with the placeholders whose values were hidden (the runnable statement keeps them). */
export interface RecordedQuery extends CapturedQuery {
  hidden?: RedactedStatement['hidden'];
}

export type RecordedInside = Omit<CapturedInside, 'queries' | 'mails' | 'ai'> & { queries: RecordedQuery[]; mails?: StoredMail[]; ai?: StoredAiCall[] };

/** Why a profile failed, where its status does not say: bits of the summary's `failed`. */
export const FAILED = { exception: 1, errorLog: 2, graphql: 4 } as const;

/** The columns a record is found by: what lists and search read. */
export interface RecordSummary {
  token: string;
  parent: string | null;
  ip: string;
  method: string;
  /** scheme://host/path?query, redacted. */
  url: string;
  status: number;
  /** Epoch milliseconds at arrival. */
  time: number;
  /** Milliseconds, to the microsecond. */
  duration: number;
  /** The OpenTelemetry trace id it ran under. */
  trace?: string | null;
  /** What the list shows beside the URL: a GraphQL request's operations ("query GetUser"), or the handler a framework named (Nest's "ArticlesController.findOne"). */
  label?: string | null;
  /** Why it failed where its status does not say: FAILED bits (0: it did not, as far as the record shows). */
  failed?: number;
  /** The request whose synchronous code it waited behind longest, when one held the loop. */
  blockedBy?: string | null;
  /** Who made it, as the list names them (see userLabel in who.ts). */
  user?: string | null;
}

/**
 * A request as it is stored: its capture with every secret taken out, and nothing derived. The
 * writer thread makes it; the pages derive their panels from it (collectors/). Bodies and the
 * exception are stored described, because redacting them needs what describing does (decoding,
 * parsing, reading code); everything else keeps the capture's raw form (header pairs, the
 * response head as Node wrote it, the router's trail). What the summary holds is left out.
 */
export interface ProfileRecord {
  /** Milliseconds, to the microsecond (the duration is the summary's). */
  ttfb: number;
  rss: number;
  aborted?: true;
  /** As the client asked for it, redacted: left out when it is the summary's path and query. */
  url?: string;
  /** Left out for 1.1. */
  httpVersion?: string;
  /** Values that are what the summary says (Host) are DERIVED. */
  rawHeaders: string[];
  query?: unknown;
  /** As responseBody. */
  requestBody?: BodyData;
  secure?: true;
  /** Left out when it is the summary's ip; null when there was none. */
  remoteAddress?: string | null;
  /** Left out when it is the status code's own text; null when there was none. */
  statusMessage?: string | null;
  /** Values of the debug headers and Date that are what the summary says are DERIVED. */
  head: string | Record<string, unknown>;
  /** Its content type is left out when it is the response's, `truncated` when false. */
  responseBody: BodyData;
  route?: string;
  /** See RequestContext.answeredAt. */
  answeredAt?: string[];
  /** See RequestContext.answeredBy. */
  answeredBy?: string;
  params?: unknown;
  trail: unknown[];
  logs?: LogLine[];
  logsDropped?: number;
  exception?: ExceptionData;
  inside?: RecordedInside;
  cpu?: CpuState;
  extra?: Record<string, unknown>;
  extraErrors?: Record<string, string>;
  /** Parts that could not be redacted, by the panel that shows them: left out, with why. */
  failed?: Record<string, string>;
  loop?: LoopState;
  /** A command's own (its name, arguments, exit code, job): its profile has type `command`. */
  command?: CommandState;
  trace?: { traceId: string; spanId: string };
  /** See recording/checks.ts. */
  checks?: Check[];
  /** See recording/dump.ts. */
  dumps?: Dump[];
  dumpsDropped?: number;
  /** See recording/translations.ts. */
  translations?: CapturedTranslations;
  /** See who.ts. */
  who?: Who;
  session?: StoredSession;
}

/**
 * The record of a capture, made in place (the capture is the writer's own, stored and dropped),
 * with every value its redaction hid: sealedRow() cuts those out of whatever else of the row holds
 * them (hidden once, hidden everywhere).
 */
export function recordOf(c: Captured, options: RecordOptions): { summary: RecordSummary; record: ProfileRecord; hidden: HiddenValues } {
  const { made, hidden } = noting(() => redactedRecord(c, options), [c.token, c.parent], options.redactKeys);
  return { ...made, hidden };
}

/**
 * The gate every stored row passes: no string of its summary or its serialised record keeps a
 * value that was hidden anywhere in it. Costs a search of the JSON for each hidden value; the
 * JSON is read and written again only when one is found.
 */
export function sealedRow<T extends { summary: RecordSummary; data: string; facts?: { key: string; line?: string; route?: string }[] }>(row: T, hidden: HiddenValues): T {
  if (hidden.size === 0) return row;
  const { summary } = row;
  summary.url = hidden.cut(summary.url);
  if (summary.label) summary.label = hidden.cut(summary.label);
  if (summary.user) summary.user = hidden.cut(summary.user);
  row.data = hidden.sealJson(row.data);
  for (const fact of row.facts ?? []) {
    fact.key = hidden.cut(fact.key);
    if (fact.line !== undefined) fact.line = hidden.cut(fact.line);
    if (fact.route !== undefined) fact.route = hidden.cut(fact.route);
  }
  return row;
}

/**
 * A part that cannot be redacted (a bug, a shape never seen) is left out and named in `failed`:
 * it costs its own panel only, and no secret is stored unredacted.
 */
function redactedRecord(c: Captured, options: RecordOptions): { summary: RecordSummary; record: ProfileRecord } {
  const keys = options.redactKeys;
  const failed: Record<string, string> = {};
  const part = <T>(panel: string, redact: () => T, instead: T): T => {
    try {
      return redact();
    } catch (err) {
      // An error's message may quote what it failed on.
      failed[panel] = redactText(`${(err as Error)?.message ?? err}`, keys);
      return instead;
    }
  };
  const head = part('response', () => headOf(c.head, keys), { head: {}, contentType: undefined, encoding: undefined, setCookies: [] });
  // Statements, commands and model calls are redacted with the request's own secrets, read before anything else is.
  const secrets = c.inside !== undefined && (c.inside.queries.length > 0 || c.inside.commands !== undefined || c.inside.ai !== undefined) ? part('db', () => secretsOf(c, head.setCookies, keys), undefined) : undefined;
  const summary: RecordSummary = {
    token: c.token,
    parent: c.parent,
    ip: c.ip,
    method: c.method,
    url: c.command !== undefined ? redactText(c.url, keys) : part('request', () => redactUrl(c.origin + c.url, keys, c.params), c.origin),
    status: c.status,
    time: c.time,
    duration: Math.round(c.duration * 1000) / 1000,
    trace: c.trace?.traceId,
    blockedBy: longestWait(c.loop),
  };
  if (c.exception !== undefined) summary.failed = FAILED.exception;
  if (c.logs?.some((line) => line.level === 'error')) summary.failed = (summary.failed ?? 0) | FAILED.errorLog;
  // What a request and a command both keep.
  const work = {
    loop: c.loop,
    logs: c.logs && part('logs', () => c.logs!.map((line) => redactedLine(line, keys)), undefined),
    logsDropped: c.logsDropped,
    exception: c.exception && part('exception', () => exceptionOf(c.exception!, c.status, keys), undefined),
    inside: c.inside && redactInside(c.inside, keys, secrets, part),
    cpu: c.cpu,
    extra: c.extra,
    extraErrors: c.extraErrors,
    checks: c.checks && part('security', () => redactChecks(c.checks!, keys, c.body), undefined),
    dumps: c.dumps && part('dumps', () => redactDumps(c.dumps!, keys), undefined),
    dumpsDropped: c.dumpsDropped,
    translations: c.translations && part('translations', () => redactTranslations(c.translations!, keys), undefined),
    failed: undefined,
  };
  if (c.command !== undefined) {
    const record: ProfileRecord = { ttfb: round(c.ttfb), rss: c.rss, rawHeaders: [], head: {}, responseBody: EMPTY_BODY, trail: [], ...work, command: part('command', () => redactCommandState(c.command!, keys), undefined), trace: c.trace };
    return { summary, record: withFailed(record, failed) };
  }
  // Read before the headers are redacted in place: their names say how a user was known.
  const who = part('security', () => whoOf(c, keys), undefined);
  const user = userLabel(who);
  if (user !== undefined) summary.user = user;
  const request = part('request', () => ({
    url: redactUrl(c.url, keys, c.params),
    rawHeaders: redactPairs(c.rawHeaders, keys),
    query: c.query === undefined ? undefined : redactQuery(c.query, keys),
    params: c.params === undefined ? undefined : redactValue(c.params, keys),
    body: requestBodyOf(c, options),
  }), { url: '', rawHeaders: [], query: undefined, params: undefined, body: undefined });
  const responseBody = part('response', () => describeBytes(rawOf(c.responseBody), head.contentType, options.bodyLimit, keys, head.encoding), EMPTY_BODY);
  const operations = part('graphql', () => graphqlOperations(request.body, request.query, responseBody), undefined);
  if (operations !== undefined) {
    summary.label = graphqlLabel(operations);
    if (operations.some((op) => op.errors !== undefined && op.errors.length > 0)) summary.failed = (summary.failed ?? 0) | FAILED.graphql;
  } else {
    // Where a framework names the route's handler (Nest's Controller.method), the list and search name it too.
    summary.label = handlerNamed(c.trail);
  }
  const record: ProfileRecord = {
    ttfb: round(c.ttfb),
    rss: c.rss,
    aborted: c.aborted || undefined,
    url: pathIn(summary.url) === request.url ? undefined : request.url,
    httpVersion: c.httpVersion === '1.1' ? undefined : c.httpVersion,
    rawHeaders: derivedHost(request.rawHeaders, summary.url),
    query: request.query,
    requestBody: request.body && stored(request.body, headerOf(c.rawHeaders, 'content-type')),
    secure: c.secure || undefined,
    remoteAddress: c.remoteAddress === c.ip ? undefined : (c.remoteAddress ?? null),
    statusMessage: c.statusMessage === STATUS_CODES[c.status] ? undefined : (c.statusMessage ?? null),
    head: typeof head.head === 'string' ? derivedHead(head.head, summary) : head.head,
    responseBody: stored(responseBody, head.contentType),
    route: c.route,
    answeredAt: c.answeredAt?.length ? c.answeredAt : undefined,
    answeredBy: c.answeredBy,
    params: request.params === undefined || isEmpty(request.params) ? undefined : request.params,
    trail: roundTimes(c.trail),
    ...work,
    trace: c.trace,
  };
  // Most requests name no one and hold no session: their records carry neither key.
  if (who !== undefined) record.who = who;
  if (c.session !== undefined) record.session = part('request', () => storedSession(c.session!, keys), undefined);
  return { summary, record: withFailed(record, failed) };
}

/** The token of the stretch it waited behind longest. */
function longestWait(loop: LoopState | undefined): string | undefined {
  let longest: { by: string; ms: number } | undefined;
  for (const w of loop?.waits ?? []) if (longest === undefined || w.ms > longest.ms) longest = w;
  return longest?.by;
}

/** The record, naming the parts that could not be redacted. */
function withFailed(record: ProfileRecord, failed: Record<string, string>): ProfileRecord {
  for (const _ in failed) {
    record.failed = failed;
    break;
  }
  return record;
}

/** Translations as stored: the values given redacted as any value is (a field named like a secret), the text that came back as text is. */
function redactTranslations(t: CapturedTranslations, keys: string[]): CapturedTranslations {
  return { ...t, messages: t.messages.map((m) => ({ ...m, result: redactText(m.result, keys), ...(m.values === undefined ? {} : { values: redactValue(m.values, keys) as Record<string, unknown> }) })) };
}

/** A command's name, arguments and failure as stored: `--password=x` and `token=…` as in a URL's query. */
function redactCommandState(command: CommandState, keys: string[]): CommandState {
  return {
    ...command,
    name: redactText(command.name, keys),
    argv: command.argv && redactArgv(command.argv, keys),
    job: command.job && { ...command.job, failedReason: command.job.failedReason === undefined ? undefined : redactText(command.job.failedReason, keys) },
  };
}

/**
 * Arguments with secrets taken out: `--password=x` and `token=x` in place; the value after a
 * `--password` alone, whatever it starts with; the password of the short flags tools give one
 * (`-p secret` and `-psecret` as mysql takes them, `-u user:password` as curl does); a URL's
 * password as in any text (`--db postgres://user:password@host`).
 */
function redactArgv(argv: string[], keys: string[]): string[] {
  return argv.map((arg, i) => {
    const before = argv[i - 1] ?? '';
    const flag = /^--?([\w.-]+)$/.exec(before);
    if (flag !== null && flag[1].length > 1 && isSecretKey(flag[1], keys)) return hide(arg);
    if (before === '-p' && !arg.startsWith('-')) return hide(arg);
    if (before === '-u' && arg.includes(':')) return `${arg.slice(0, arg.indexOf(':'))}:${hide(arg.slice(arg.indexOf(':') + 1))}`;
    if (/^-p[^-]/.test(arg)) return `-p${hide(arg.slice(2))}`;
    return redactText(arg, keys);
  });
}

/** A body as a record keeps it: its content type left out when it is its message's, `truncated` only when true. */
function stored(body: BodyData, contentType: string | undefined): BodyData {
  if (body.contentType === contentType) body.contentType = undefined;
  if (!body.truncated) (body as { truncated?: boolean }).truncated = undefined;
  return body;
}

const EMPTY_BODY: BodyData = { size: 0, kind: 'text', text: '', truncated: false };

/** A header value that is what the summary says: the reader puts it back (see collectors/snapshot.ts). No header value can hold it: Node refuses DEL. */
export const DERIVED = '\x7f';

const round = (ms: number) => Math.round(ms * 1000) / 1000;

/** The trail's times to the microsecond: what the spans show. */
function roundTimes(trail: unknown[]): unknown[] {
  for (let i = 1; i < trail.length; i += 2) trail[i] = round(trail[i] as number);
  return trail;
}

const isEmpty = (value: unknown): boolean => {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  for (const key in value) if (Object.hasOwn(value, key)) return false;
  return true;
};

/** The path and query of a summary's URL (scheme://host/path?query). */
export function pathIn(url: string): string {
  const at = url.indexOf('/', url.indexOf('//') + 2);
  return at < 0 ? '' : url.slice(at);
}

/** scheme://host of a summary's URL. */
const originIn = (url: string): string => url.slice(0, url.length - pathIn(url).length);

/** The host of a summary's URL: the request's Host header, most often. */
export const hostIn = (url: string): string => {
  const origin = originIn(url);
  return origin.slice(origin.indexOf('//') + 2);
};

/** A profile's own link, as X-Debug-Token-Link gives it. */
export const linkIn = (url: string, token: string): string => `${originIn(url)}/_profiler/${token}`;

/** The Host header DERIVED when the summary's URL was made from it. */
function derivedHost(raw: string[], url: string): string[] {
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (raw[i].length === 4 && raw[i].toLowerCase() === 'host' && raw[i + 1] === hostIn(url)) raw[i + 1] = DERIVED;
  }
  return raw;
}

/**
 * The debug headers and Date DERIVED where they have the values the summary gives them (see
 * DERIVED_HEADERS in collectors/snapshot.ts), then each line most heads carry as two characters
 * (see headLines): a hello's head is most of its record.
 */
function derivedHead(head: string, summary: RecordSummary): string {
  const token = `X-Debug-Token: ${summary.token}`;
  const link = `X-Debug-Token-Link: ${linkIn(summary.url, summary.token)}`;
  const date = `Date: ${httpDate(summary.time)}`;
  // One pass over the lines (a head is written once a request): a line the summary says is stored as its code.
  const lines = head.split('\r\n');
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i];
    if (line === token) lines[i] = TOKEN_CODE;
    else if (line === link) lines[i] = LINK_CODE;
    else if (line === date) lines[i] = DATE_CODE;
    else if (line === 'X-Robots-Tag: noindex') lines[i] = ROBOTS_CODE;
    else lines[i] = LINE_CODES.get(line) ?? line;
  }
  return lines.join('\r\n');
}

/**
 * Head lines as Express and Node write them on most responses, each stored as DERIVED and a
 * letter: no line of a real head starts with DEL. Append only: stored records name them by place.
 */
const COMMON_LINES = [
  'X-Powered-By: Express',
  'Connection: keep-alive',
  'Keep-Alive: timeout=5',
  'Connection: close',
  'Transfer-Encoding: chunked',
  'Content-Type: text/html; charset=utf-8',
  'Content-Type: application/json; charset=utf-8',
  'Content-Type: text/plain; charset=utf-8',
  `X-Debug-Token: ${DERIVED}`,
  `X-Debug-Token-Link: ${DERIVED}`,
  `X-Robots-Tag: ${DERIVED}`,
  `Date: ${DERIVED}`,
];
const LINE_CODES = new Map(COMMON_LINES.map((line, i) => [line, DERIVED + String.fromCharCode(97 + i)]));
const TOKEN_CODE = LINE_CODES.get(`X-Debug-Token: ${DERIVED}`)!;
const LINK_CODE = LINE_CODES.get(`X-Debug-Token-Link: ${DERIVED}`)!;
const ROBOTS_CODE = LINE_CODES.get(`X-Robots-Tag: ${DERIVED}`)!;
const DATE_CODE = LINE_CODES.get(`Date: ${DERIVED}`)!;

/** A stored head with its common lines written out again. */
export function headLines(head: string): string {
  if (!head.includes(DERIVED)) return head;
  const lines = head.split('\r\n');
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i];
    if (line.length === 2 && line[0] === DERIVED) lines[i] = COMMON_LINES[line.charCodeAt(1) - 97] ?? line;
  }
  return lines.join('\r\n');
}

let dateSecond = NaN;
let dateText = '';

/** The Date header of a response sent in the second `time` falls in (one string a second, not one a profile). */
export function httpDate(time: number): string {
  const second = Math.floor(time / 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateText = new Date(second * 1000).toUTCString();
  }
  return dateText;
}

function requestBodyOf(c: Captured, options: RecordOptions): BodyData | undefined {
  const keys = options.redactKeys;
  const contentType = headerOf(c.rawHeaders, 'content-type');
  if (c.bodyUnparsed !== undefined && c.rawBody !== undefined) {
    return { ...describeBytes(rawOf(c.rawBody), 'text/plain', options.bodyLimit, keys), contentType, unparsed: redactText(c.bodyUnparsed, keys) };
  }
  if (c.rawBody !== undefined) return describeBytes(rawOf(c.rawBody), contentType ?? 'text/plain', options.bodyLimit, keys);
  return describeParsed(c.body, c.bodyCut === true, Number(headerOf(c.rawHeaders, 'content-length')), contentType, options.bodyLimit, keys);
}

function exceptionOf(e: ExceptionData, status: number, keys: string[]): ExceptionData {
  addExcerpts(e);
  return withSentStatus(redactException(e, keys), status);
}

/**
 * The texts of an exception with secret-looking fields replaced: messages and stacks quote what
 * the app was given; its code excerpts may write a secret in (`const API_SECRET = '…'`).
 */
export function redactException(data: ExceptionData, keys: string[]): ExceptionData {
  return {
    ...data,
    chain: data.chain.map((e) => ({
      ...e,
      message: redactText(e.message, keys),
      stack: redactText(e.stack, keys),
      ...(e.details === undefined ? {} : { details: redactValue(asPanels(e.details, keys), keys) as Record<string, unknown> }),
      frames: e.frames.map((f) => (f.excerpt === undefined ? f : { ...f, excerpt: { ...f.excerpt, lines: f.excerpt.lines.map((line) => redactSource(line, keys)) } })),
    })),
  };
}

/** A string literal given to a name like a secret's in code (`API_SECRET = '…'`, `password: "…"`, `apiKey = \`…\``): not `==`, `=>`. */
const ASSIGNED_LITERAL = /([A-Za-z_$][\w$]*)(['"]?)\s*(?:[:=](?![=>]))\s*(['"`])((?:\\.|(?!\3)[^\\])*)\3/g;

/** A line of the app's code with the literals it gives secret names hidden, as redactText hides them in prose. */
function redactSource(line: string, keys: string[]): string {
  const text = redactText(line, keys);
  if (!text.includes('=') && !text.includes(':')) return text;
  return text.replace(ASSIGNED_LITERAL, (whole, name: string, quote: string, mark: string, literal: string) =>
    literal !== '' && literal !== REDACTED && isSecretKey(name, keys) ? `${name}${quote}${whole.slice(name.length + quote.length, whole.length - literal.length - 1)}${hide(literal)}${mark}` : whole);
}

/** A statement as a driver's error quotes it (mysql2's `sql`, with the values written in). */
const STATEMENT = /^\s*(SELECT|INSERT|UPDATE|DELETE|REPLACE|UPSERT|MERGE|WITH|CALL|EXEC|SET|CREATE|ALTER|DROP)\b/i;
/** A URL as a client's error quotes it (`config.url`, `request.url`). */
const URL_TEXT = /^[a-z][a-z0-9+.-]*:\/\/\S+$/i;

/**
 * An error's own fields with the statements and URLs they quote redacted as the db and HTTP
 * panels redact theirs (a secret column's literal, `?key=`), at any depth, within the bound the
 * capture gave them.
 */
function asPanels(value: unknown, keys: string[], depth = 0): unknown {
  if (typeof value === 'string') {
    if (STATEMENT.test(value)) return redactStatement(value, undefined, keys).sql;
    return URL_TEXT.test(value) ? redactUrl(value, keys) : value;
  }
  if (value === null || typeof value !== 'object' || depth > 8) return value;
  if (Array.isArray(value)) return value.map((v) => asPanels(v, keys, depth + 1));
  // A Redis client's command (ioredis's `err.command`): its values hidden as the cache panel hides them.
  const { name, args } = value as { name?: unknown; args?: unknown };
  if (typeof name === 'string' && Array.isArray(args) && args.every((a) => typeof a === 'string' || typeof a === 'number')) return { ...value, args: redactArgs(name, args.map(String)) };
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) setOwn(out, key, asPanels((value as Record<string, unknown>)[key], keys, depth + 1));
  boundValues(value as Record<string, unknown>, out, keys);
  // An HTTP client's request (axios's `config`): its `params` are the URL's query.
  if (typeof out.url === 'string' && out.params !== null && typeof out.params === 'object' && !Array.isArray(out.params)) out.params = redactQuery(out.params, keys);
  return out;
}

/**
 * A driver's bound values on its error (Sequelize's and pg's `parameters`, knex's `bindings`), as
 * the db panel redacts a statement's: by the column each goes with where the statement is beside
 * them, else as values of no known column (token-shaped ones hidden).
 */
function boundValues(given: Record<string, unknown>, out: Record<string, unknown>, keys: string[]): void {
  const name = Array.isArray(given.parameters) ? 'parameters' : Array.isArray(given.bindings) ? 'bindings' : undefined;
  if (name === undefined) return;
  const sql = given.sql;
  out[name] = typeof sql === 'string' && sql !== '' ? redactStatement(sql, given[name], keys).params : (redactValue(given[name], keys) as unknown[]).map((v) => (looksLikeToken(v) ? hide(v) : v));
}

type Part = <T>(panel: string, redact: () => T, instead: T) => T;

function redactInside(inside: CapturedInside, keys: string[], secrets: RequestSecrets | undefined, part: Part): RecordedInside {
  const queries = part('db', () => inside.queries.map((q): RecordedQuery => {
    const statement = redactStatement(q.sql, q.params, keys, secrets);
    const hidden = statement.hidden.indexes.length + statement.hidden.names.length > 0 ? statement.hidden : undefined;
    return { ...q, sql: statement.sql, params: statement.params, hidden, error: q.error && { ...q.error, message: redactText(q.error.message, keys) } };
  }), []);
  const calls = part('http_client', () => inside.calls.map((call) => ({
    ...call,
    url: redactUrl(call.url, keys),
    requestHeaders: redactHeaders((call.requestHeaders ?? {}) as Record<string, unknown>, keys),
    responseHeaders: redactHeaders((call.responseHeaders ?? {}) as Record<string, unknown>, keys),
    error: call.error && { ...call.error, message: redactText(call.error.message, keys) },
  })), []);
  const out: RecordedInside = { ...inside, queries, calls, mails: undefined, ai: undefined };
  if (inside.commands) out.commands = part('cache', () => inside.commands!.map((command) => redactCommand(command, keys, secrets)), []);
  if (inside.renders) {
    out.renders = part('views', () => inside.renders!.map((r) => ({
      ...r,
      ...(r.values !== undefined ? { values: redactValue(r.values, keys) } : {}),
      ...(r.error ? { error: { ...r.error, message: redactText(r.error.message, keys) } } : {}),
    })), []);
  }
  if (inside.mails) out.mails = part('mail', () => inside.mails!.map((mail) => redactMail(mail, keys)), []);
  if (inside.marks.some((m) => m.attributes !== undefined)) out.marks = part('performance', () => inside.marks.map((m) => (m.attributes === undefined ? m : { ...m, attributes: redactValue(m.attributes, keys) as Record<string, unknown> })), []);
  if (inside.ai) out.ai = part('ai', () => inside.ai!.map((c) => storedAiCall(c, keys, secrets)), []);
  if (inside.queued) out.queued = part('jobs', () => inside.queued!.map((q) => (q.error ? { ...q, error: { ...q.error, message: redactText(q.error.message, keys) } } : q)), []);
  return out;
}

function secretsOf(c: Captured, setCookies: string[], keys: string[]): RequestSecrets {
  return RequestSecrets.of({
    query: c.query,
    body: c.body,
    rawBody: c.rawBody && rawOf(c.rawBody).bytes,
    params: c.params,
    headers: pairsOf(c.rawHeaders),
    setCookies,
  }, keys);
}

function* pairsOf(raw: string[]): Generator<[string, string]> {
  for (let i = 0; i + 1 < raw.length; i += 2) yield [String(raw[i]), String(raw[i + 1])];
}

/** A request header's value from the raw pairs: repeats joined as Node's header object would show them. */
function headerOf(raw: string[], name: string): string | undefined {
  let value: string | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (raw[i].length === name.length && raw[i].toLowerCase() === name) value = value === undefined ? raw[i + 1] : `${value},${raw[i + 1]}`;
  }
  return value;
}

/** The raw pairs with each value redacted as its header's: changed in place, most values are not. */
function redactPairs(raw: string[], keys: string[]): string[] {
  for (let i = 0; i + 1 < raw.length; i += 2) raw[i + 1] = redactHeaderValue(String(raw[i]).toLowerCase(), String(raw[i + 1]), keys);
  return raw;
}

interface Head {
  head: string | Record<string, unknown>;
  contentType: string | undefined;
  encoding: unknown;
  setCookies: string[];
}

/**
 * The response head with each header's value redacted, read line by line in place; the string is
 * only rebuilt when a value changed. Also what describing the body needs of it, and the cookies
 * set (secrets a statement may repeat).
 */
function headOf(given: string | Record<string, unknown>, keys: string[]): Head {
  if (typeof given !== 'string') {
    const setCookie = given['set-cookie'];
    const contentType = given['content-type'];
    return {
      head: redactHeaders(given, keys),
      contentType: contentType === undefined ? undefined : String(contentType),
      encoding: given['content-encoding'],
      setCookies: (Array.isArray(setCookie) ? setCookie : setCookie === undefined ? [] : [setCookie]).map(String),
    };
  }
  const found: Head = { head: given, contentType: undefined, encoding: undefined, setCookies: [] };
  let out = '';
  let from = 0;
  for (let at = given.indexOf('\r\n') + 2; at > 1 && at < given.length;) {
    const end = given.indexOf('\r\n', at);
    const stop = end < 0 ? given.length : end;
    const colon = given.indexOf(':', at);
    if (colon > at && colon < stop) {
      const name = given.slice(at, colon).toLowerCase();
      const value = given.slice(colon + 1, stop).trim();
      if (name === 'content-type') found.contentType = found.contentType === undefined ? value : `${found.contentType},${value}`;
      else if (name === 'content-encoding') found.encoding = found.encoding === undefined ? value : [found.encoding, value].flat();
      else if (name === 'set-cookie') found.setCookies.push(value);
      const redacted = redactHeaderValue(name, value, keys);
      if (redacted !== value) {
        out += `${given.slice(from, colon + 1)} ${redacted}`;
        from = stop;
      }
    }
    at = stop + 2;
  }
  if (from > 0) found.head = out + given.slice(from);
  return found;
}
