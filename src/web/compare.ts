import type { Profile } from '../storage/profile.js';

export interface Difference {
  path: string;
  left: unknown;
  right: unknown;
}

export interface ComparedRow extends Difference {
  differs: boolean;
}

export interface ComparedSection {
  title: string;
  rows: ComparedRow[];
}

/** Headers that differ on every response and say nothing about why two calls differ. */
const VOLATILE_RESPONSE_HEADERS = new Set(['date', 'x-debug-token', 'x-debug-token-link']);

type Any = Record<string, any>;

const text = (v: unknown): unknown => (v === undefined || v === null || typeof v !== 'object' ? v : JSON.stringify(v));

function keyed(title: string, prefix: string, left: unknown, right: unknown, skip: Set<string> = new Set()): ComparedSection {
  const l = (left ?? {}) as Any;
  const r = (right ?? {}) as Any;
  const keys = [...new Set([...Object.keys(l), ...Object.keys(r)])].filter((k) => !skip.has(k.toLowerCase())).sort();
  return { title, rows: keys.map((k) => row(`${prefix}.${k}`, text(l[k]), text(r[k]))) };
}

const row = (path: string, left: unknown, right: unknown): ComparedRow => ({ path, left, right, differs: left !== right });

function bodyText(body: Any | undefined): unknown {
  if (!body) return undefined;
  if (body.json !== undefined) return JSON.stringify(body.json);
  if (body.text !== undefined) return body.truncated ? `${body.text}… (cut)` : body.text;
  return `${body.kind} body, ${body.size} bytes`;
}

const logLines = (logs: Any | undefined): unknown => (logs?.lines?.length ? (logs.lines as Any[]).map((l) => `${l.level}: ${l.message}`).join('\n') : undefined);

function exceptionText(exception: Any | undefined): unknown {
  const chain = exception?.chain as Any[] | undefined;
  return chain?.length ? chain.map((e) => `${e.class}: ${e.message}`).join('\n← ') : undefined;
}

/** Who made a request, on one line: "ada (id 7) via session". */
function whoText(who: Any | undefined): unknown {
  if (who === undefined) return undefined;
  const name = who.anonymous ? 'anonymous' : (who.username ?? who.email ?? who.name ?? `#${who.id}`);
  return `${name}${who.id !== undefined && name !== `#${who.id}` ? ` (id ${who.id})` : ''} via ${who.via}${who.key ? ` ${who.key}` : ''}`;
}

/** Two requests' sessions: what happened to each, and each attribute as it left it. */
function sessionSections(left: Any | undefined, right: Any | undefined): ComparedSection[] {
  if (left === undefined && right === undefined) return [];
  const events = (s: Any | undefined) => (s === undefined ? undefined : s.events.length > 0 ? s.events.join(', ') : 'unchanged');
  return [
    { title: 'Session', rows: [row('session.events', events(left), events(right))] },
    keyed('Session, as each request left it', 'session.left', left?.left, right?.left),
  ];
}

/**
 * Two profiles side by side, field by field: status, request headers, query and body, response
 * headers and body, who made them and their sessions, log lines, exception, and the totals; each
 * row says whether it differs.
 */
export function compareProfiles(a: Profile, b: Profile): ComparedSection[] {
  const ca = a.collectors as Any;
  const cb = b.collectors as Any;
  return [
    { title: 'Request and response', rows: [row('method', a.method, b.method), row('url', a.url, b.url), row('status', a.status, b.status)] },
    keyed('Request headers', 'request.headers', ca.request?.headers, cb.request?.headers),
    keyed('Query', 'request.query', ca.request?.query, cb.request?.query),
    { title: 'Request body', rows: [row('request.body', bodyText(ca.request?.body), bodyText(cb.request?.body))] },
    keyed('Response headers', 'response.headers', ca.response?.headers, cb.response?.headers, VOLATILE_RESPONSE_HEADERS),
    { title: 'Response body', rows: [row('response.body', bodyText(ca.response?.body), bodyText(cb.response?.body))] },
    { title: 'Who', rows: [row('who', whoText(ca.security?.who), whoText(cb.security?.who))] },
    ...sessionSections(ca.request?.session, cb.request?.session),
    { title: 'Log', rows: [row('logs', logLines(ca.logs), logLines(cb.logs))] },
    { title: 'Exception', rows: [row('exception', exceptionText(ca.exception), exceptionText(cb.exception))] },
    {
      title: 'Totals',
      rows: [
        row('totals.duration', a.duration, b.duration),
        row('totals.ttfb', ca.performance?.ttfb, cb.performance?.ttfb),
        row('totals.memory', ca.performance?.rss, cb.performance?.rss),
        row('totals.queries', ca.db?.count ?? 0, cb.db?.count ?? 0),
        row('totals.queryTime', ca.db?.time ?? 0, cb.db?.time ?? 0),
        row('totals.httpCalls', ca.http_client?.count ?? 0, cb.http_client?.count ?? 0),
      ],
    },
  ].filter((section) => section.rows.length > 0);
}

export const differencesOf = (sections: ComparedSection[]): Difference[] =>
  sections.flatMap((s) => s.rows.filter((r) => r.differs).map(({ path, left, right }) => ({ path, left: left ?? null, right: right ?? null })));
