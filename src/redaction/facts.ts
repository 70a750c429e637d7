import type { Check } from '../recording/checks.js';
import type { ProfileRecord, RecordSummary } from './record.js';
import { keysOf, lookups } from './cache-reads.js';

/**
 * What a profile adds to the insights across requests (see web/insights.ts), derived by the
 * writer from the record as stored (redacted) and added to the sums of its minute and its hour
 * (see storage/insight-sums.ts).
 */
export interface Fact {
  kind: FactKind;
  /** What it is grouped by: a route's pattern, a statement's text with its values out, an error's class and message pattern… */
  key: string;
  /** How many in this profile: a statement's runs, a call's count; for a route, the statements its request ran. */
  n: number;
  /** Milliseconds in total (a route: the request's duration). */
  ms: number;
  /** The longest one, in milliseconds. */
  peak: number;
  /** What went wrong: a route's error (1) and likely N+1 (2), a call's failures, a read's misses. */
  bad: number;
  /** The app's line: a statement's first caller, an exception's throwing line. */
  line?: string;
  /** The route (or command) of the profile it was seen in: what ran it. */
  route?: string;
}

export type FactKind = 'route' | 'command' | 'statement' | 'exception' | 'refusal' | 'call' | 'cache' | 'missing' | 'warning' | 'user';

/** Route facts' `bad` bits. */
export const ROUTE_ERROR = 1;
export const ROUTE_N_PLUS_ONE = 2;

/** A statement run this often from one line in one request is a likely N+1: the db panel's rule and the insights'. */
export const N_PLUS_ONE = 5;
const MAX_KEY = 300;

/** Values that differ from one request to the next: UUIDs, long hex, numbers. */
const VALUES = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b|\b(?=[0-9a-f]*\d)[0-9a-f]{12,}\b|\b\d+(?:\.\d+)?\b/gi;
const cut = (text: string) => (text.length > MAX_KEY ? `${text.slice(0, MAX_KEY)}…` : text);

/** A message as a pattern: quoted values and numbers out (`user 42 not found` → `user # not found`). */
export const patternOf = (text: string): string => cut(text.replace(/(["'`])[^"'`\n]{0,200}\1/g, '$1…$1').replace(VALUES, '#').replace(/\s+/g, ' ').trim());

/** The patterns of the statements seen last: an app runs the same few texts again and again (a bound of them, on the writer's thread). */
const patterns = new Map<string, string>();

/** A statement with its values out: literals and numbers as `?`, an IN list as one. */
export function statementPattern(sql: string): string {
  let pattern = patterns.get(sql);
  if (pattern === undefined) {
    if (patterns.size >= 500) patterns.clear();
    patterns.set(sql, (pattern = cut(sql.replace(/'(?:[^']|'')*'/g, '?').replace(/\b\d+(?:\.\d+)?\b/g, '?').replace(/\$\d+/g, '?').replace(/\(\s*\?(?:\s*,\s*\?)+\s*\)/g, '(?)').replace(/\s+/g, ' ').trim())));
  }
  return pattern;
}

/** A path with its ids out: `/users/42/orders/9f1c…` → `/users/:id/orders/:id`. */
export const pathPattern = (path: string): string => path.split('/').map((part) => (/^(?:\d+|[0-9a-f]{8}-[0-9a-f-]{27}|(?=[0-9a-f]*\d)[0-9a-f]{12,}|[A-Za-z0-9_-]{20,})$/i.test(part) ? ':id' : part)).join('/');

/** A cache key with its ids out: `user:42:profile` → `user:*:profile`. */
const keyPattern = (key: string): string => cut(key.replace(VALUES, '*'));

/**
 * The facts of one stored profile. `hide` cuts what the record's gate hid (see hidden.ts) from
 * each text before it is made a pattern: a pattern no longer holds the hidden value whole.
 */
export function factsOf(summary: RecordSummary, record: ProfileRecord, type: string, hide: (text: string) => string = (text) => text): Fact[] {
  const facts: Fact[] = [];
  const messagePattern = (text: string) => patternOf(hide(text));
  const inside = record.inside;
  // Statements grouped by their pattern, with the runs from each line (N+1 is many from one line).
  let nPlusOne = false;
  if (inside !== undefined && inside.queries.length > 0) {
    const groups = new Map<string, Fact & { lines: Map<string, number> }>();
    for (const q of inside.queries) {
      const key = statementPattern(hide(q.sql));
      const ms = Math.max(0, q.end - q.start);
      let g = groups.get(key);
      if (g === undefined) groups.set(key, (g = { kind: 'statement', key, n: 0, ms: 0, peak: 0, bad: 0, line: q.caller, lines: new Map() }));
      g.n++;
      g.ms += ms;
      if (ms > g.peak) g.peak = ms;
      if (q.error !== undefined) g.bad++;
      const line = q.caller ?? '';
      const runs = (g.lines.get(line) ?? 0) + 1;
      g.lines.set(line, runs);
      if (runs === N_PLUS_ONE) nPlusOne = true;
    }
    for (const { lines: _lines, ...g } of groups.values()) facts.push(g);
  }
  // A 4xx is the client's (a 404 notFound describes as an exception is no failure of the route); an exception answered 2xx or 3xx is one.
  const failed = type === 'command' ? summary.status !== 0 : summary.status >= 500 || (record.exception !== undefined && summary.status < 400);
  const name = hide(type === 'command' ? `${summary.method} ${summary.url.replace(/\s*#\S+$/, '')}` : `${summary.method} ${record.route ?? '(no route)'}`);
  const route = cut(name);
  facts.unshift({ kind: type === 'command' ? 'command' : 'route', key: route, n: inside?.queryCount ?? 0, ms: summary.duration, peak: summary.duration, bad: (failed ? ROUTE_ERROR : 0) | (nPlusOne ? ROUTE_N_PLUS_ONE : 0) });
  const thrown = record.exception?.chain[0];
  if (thrown !== undefined) {
    const at = thrown.frames.find((f) => f.kind === 'app');
    facts.push({ kind: 'exception', key: cut(`${thrown.class}: ${messagePattern(thrown.message)}`), n: 1, ms: 0, peak: 0, bad: 1, line: at === undefined ? undefined : `${at.file}:${at.line}` });
  }
  for (const check of refusals(record.checks)) facts.push({ kind: 'refusal', key: cut(`${check.library}: ${messagePattern(check.reason)}`), n: 1, ms: 0, peak: 0, bad: 1, line: check.at });
  for (const call of inside?.calls ?? []) {
    const ms = Math.max(0, call.end - call.start);
    facts.push({ kind: 'call', key: cut(`${call.method} ${callPattern(hide(call.url))}`), n: 1, ms, peak: ms, bad: call.error !== undefined || (call.status ?? 0) >= 500 ? 1 : 0 });
  }
  for (const command of flat(inside?.commands ?? [])) {
    const keys = keysOf(command.command, command.args);
    const read = lookups(command, keys);
    if (read === undefined || keys.length === 0) continue;
    facts.push({ kind: 'cache', key: cut(`${command.command.toUpperCase()} ${keyPattern(hide(keys[0]))}`), n: read.hits + read.misses, ms: 0, peak: 0, bad: read.misses });
  }
  for (const m of record.translations?.messages ?? []) if (m.state === 'missing') facts.push({ kind: 'missing', key: cut(hide(`${m.ns}:${m.key} (${m.lng})`)), n: m.count, ms: 0, peak: 0, bad: m.count });
  for (const line of record.logs ?? []) if (line.level === 'warn') facts.push({ kind: 'warning', key: messagePattern(line.message), n: 1, ms: 0, peak: 0, bad: 0 });
  if (summary.user) facts.push({ kind: 'user', key: summary.user, n: 1, ms: summary.duration, peak: summary.duration, bad: failed ? 1 : 0 });
  for (const f of facts) if (f.kind !== 'route' && f.kind !== 'command') f.route = route;
  return merged(facts);
}

/** The checks that refused it. */
const refusals = (checks: Check[] | undefined): Check[] => (checks ?? []).filter((c) => c.verdict === 'refused' || c.verdict === 'error');

/** A call's host and path pattern, without its query. */
function callPattern(url: string): string {
  try {
    const u = new URL(url);
    return `${u.host}${pathPattern(u.pathname)}`;
  } catch {
    return patternOf(url);
  }
}

type Command = NonNullable<NonNullable<ProfileRecord['inside']>['commands']>[number];
const flat = (commands: Command[]): Command[] => commands.flatMap((c) => (c.commands === undefined ? [c] : flat(c.commands)));

/** Facts of one kind and key in one profile as one (a warning logged twice, two calls to one endpoint). */
function merged(facts: Fact[]): Fact[] {
  const byKey = new Map<string, Fact>();
  for (const f of facts) {
    const id = `${f.kind}\t${f.key}`;
    const seen = byKey.get(id);
    if (seen === undefined) byKey.set(id, f);
    else {
      seen.n += f.n;
      seen.ms += f.ms;
      seen.peak = Math.max(seen.peak, f.peak);
      seen.bad += f.bad;
    }
  }
  return [...byKey.values()];
}
