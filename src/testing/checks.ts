import type { DbData } from '../collectors/db.js';
import type { MailData } from '../collectors/mail.js';
import type { TranslationsData } from '../collectors/translations.js';
import type { ErrorInfo, ExceptionData } from '../errors/describe.js';
import type { Profile } from '../storage/profile.js';
import type { SecurityData } from '../collectors/security.js';
import type { Who } from '../redaction/who.js';

/** A check of a profile: whether it holds, and what to say either way (the test reads it when it fails). */
export interface Verdict {
  pass: boolean;
  message: () => string;
}

const MAX_LISTED = 20;
const dbOf = (p: Profile) => p.collectors.db as DbData | undefined;

/** The request's statements, numbered, with the line that ran each: what a failing query check shows. */
export function queriesText(p: Profile): string {
  const queries = dbOf(p)?.queries ?? [];
  if (queries.length === 0) return '  (no queries)';
  const lines = queries.slice(0, MAX_LISTED).map((q, i) => `  ${i + 1}. ${q.sql.replace(/\s+/g, ' ').trim()}${q.caller ? `   (${q.caller})` : ''}`);
  if (queries.length > MAX_LISTED) lines.push(`  … and ${queries.length - MAX_LISTED} more`);
  return lines.join('\n');
}

/** An error of the chain with the app's frames: what a failing test shows of an exception. */
export function errorText(e: ErrorInfo): string {
  const frames = e.frames.filter((f) => f.kind === 'app').slice(0, 5).map((f) => `    at ${f.fn} (${f.file}:${f.line})`);
  return [`  ${e.class}: ${e.message}`, ...frames].join('\n');
}

export function exceptionText(p: Profile): string {
  const data = p.collectors.exception as ExceptionData | undefined;
  return data === undefined ? '  (no exception)' : data.chain.map(errorText).join('\n  caused by\n');
}

const where = (p: Profile) => `${p.method} ${p.url} → ${p.status} (profile ${p.token})`;

export function queryCount(p: Profile, expected: number): Verdict {
  const count = dbOf(p)?.count ?? 0;
  return { pass: count === expected, message: () => `${where(p)} ran ${count} ${count === 1 ? 'query' : 'queries'}, expected ${expected}:\n${queriesText(p)}` };
}

export function nPlusOne(p: Profile): Verdict {
  const groups = (dbOf(p)?.groups ?? []).filter((g) => g.nPlusOne);
  return {
    pass: groups.length > 0,
    message: () => (groups.length > 0
      ? `${where(p)} ran a statement again and again from one line (likely N+1):\n${groups.map((g) => `  ${g.count} × ${g.sql.replace(/\s+/g, ' ').trim()}\n${g.callers.map((c) => `      ${c.count} × from ${c.caller}`).join('\n')}`).join('\n')}`
      : `${where(p)} ran no statement 5 times or more from one line:\n${queriesText(p)}`),
  };
}

export function queryMatching(p: Profile, pattern: string | RegExp): Verdict {
  const test = typeof pattern === 'string' ? (sql: string) => sql.includes(pattern) : (sql: string) => pattern.test(sql);
  const found = (dbOf(p)?.queries ?? []).filter((q) => test(q.sql));
  return { pass: found.length > 0, message: () => `${where(p)} ${found.length > 0 ? `ran ${found.length} ${found.length === 1 ? 'query' : 'queries'} matching` : 'ran no query matching'} ${String(pattern)}:\n${queriesText(p)}` };
}

export function mailTo(p: Profile, address: string | RegExp): Verdict {
  const messages = (p.collectors.mail as MailData | undefined)?.messages ?? [];
  const test = (a: string) => (typeof address === 'string' ? a.toLowerCase().includes(address.toLowerCase()) : address.test(a));
  const sent = messages.filter((m) => [...m.to, ...m.cc, ...m.bcc].some(test));
  const listed = messages.length === 0 ? '  (no mail)' : messages.map((m) => `  ${m.n}. "${m.subject ?? ''}" to ${[...m.to, ...m.cc, ...m.bcc].join(', ')}${m.error ? ` (failed: ${m.error.message})` : ''}`).join('\n');
  return { pass: sent.length > 0, message: () => `${where(p)} ${sent.length > 0 ? 'sent' : 'sent no'} mail to ${String(address)}:\n${listed}` };
}

export function exception(p: Profile, pattern?: string | RegExp): Verdict {
  const chain = (p.collectors.exception as ExceptionData | undefined)?.chain ?? [];
  const test = pattern === undefined ? () => true : (e: ErrorInfo) => (typeof pattern === 'string' ? e.message.includes(pattern) || e.class === pattern : pattern.test(`${e.class}: ${e.message}`));
  const pass = chain.some(test);
  return { pass, message: () => `${where(p)} ${pass ? 'threw' : 'threw no exception'}${pattern === undefined ? '' : ` matching ${String(pattern)}`}:\n${exceptionText(p)}` };
}

/** Whether the request asked i18next for a key it has in no language: what the check says lists each, with the language asked. */
export function missingTranslations(p: Profile): Verdict {
  const messages = (p.collectors.translations as TranslationsData | undefined)?.messages ?? [];
  const missing = messages.filter((m) => m.state === 'missing');
  const listed = missing.slice(0, MAX_LISTED).map((m) => `  ${m.ns}:${m.key} (${m.lng}${m.count > 1 ? `, ${m.count} times` : ''})`);
  return {
    pass: missing.length > 0,
    message: () => (missing.length > 0 ? `${where(p)} has ${missing.length} missing ${missing.length === 1 ? 'translation' : 'translations'}:\n${listed.join('\n')}` : `${where(p)} has no missing translation (${messages.length} translated)`),
  };
}

/** Who a profile says made it, as a failing check shows it. */
const whoText = (who: Who | undefined): string => (who === undefined ? 'no one the app knew' : `${JSON.stringify(Object.fromEntries(Object.entries(who).filter(([k]) => k !== 'claims')))}`);

/** Whether the request was made by the user `expected` names: each field given (id, username, email, name, roles, via, key) is the profile's. */
export function madeAs(p: Profile, expected: Partial<Who>): Verdict {
  const who = (p.collectors.security as SecurityData | undefined)?.who;
  const pass = who !== undefined && Object.entries(expected).every(([k, v]) => JSON.stringify((who as unknown as Record<string, unknown>)[k]) === JSON.stringify(v));
  return { pass, message: () => `${where(p)} was made by ${whoText(who)}, expected ${JSON.stringify(expected)}` };
}
