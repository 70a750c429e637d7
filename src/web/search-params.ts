import type { Request } from 'express';
import { isToken } from '../recording/token.js';
import type { SearchFilter } from '../storage/store.js';

export const LIMITS = [10, 50, 100] as const;
export const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
/** What a command's method column says: how it came to run (see recording/command.ts). */
export const COMMAND_KINDS = ['RUN', 'SCRIPT', 'JOB'] as const;

export type Parsed = { ok: true; filter: SearchFilter; form: Record<string, string> } | { ok: false; error: string };

const one = (value: unknown): string | undefined => {
  if (Array.isArray(value)) return one(value[0]);
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
};

/** A date the form sends (2026-11-21T10:00) or epoch milliseconds. */
export function parseTime(value: string): number | undefined {
  const t = /^\d{10,13}$/.test(value) ? Number(value) : Date.parse(/Z|[+-]\d\d:?\d\d$/.test(value) ? value : `${value}Z`);
  return Number.isFinite(t) ? t : undefined;
}

/**
 * Search filters from the query string. A value that cannot mean anything is an error the page
 * names (400), never a query; unknown parameters are ignored.
 */
export function parseSearch(req: Request): Parsed {
  const q = req.query as Record<string, unknown>;
  const form: Record<string, string> = {};
  const filter: SearchFilter = { limit: 50 };
  const ip = one(q.ip);
  if (ip) {
    if (ip.length > 100) return { ok: false, error: 'ip: at most 100 characters.' };
    filter.ip = form.ip = ip;
  }
  const method = one(q.method);
  if (method) {
    const m = method.toUpperCase();
    if (![...METHODS, ...COMMAND_KINDS].includes(m as never)) return { ok: false, error: `method: one of ${[...METHODS, ...COMMAND_KINDS].join(', ')}.` };
    filter.method = form.method = m;
  }
  const status = one(q.status_code ?? q.status);
  if (status) {
    if (!/^[1-5]\d\d$/.test(status)) return { ok: false, error: 'status_code: a number from 100 to 599.' };
    filter.status = Number(status);
    form.status_code = status;
  }
  const url = one(q.url);
  if (url) {
    if (url.length > 2000) return { ok: false, error: 'url: at most 2000 characters.' };
    filter.url = form.url = url;
  }
  for (const key of ['start', 'end'] as const) {
    const value = one(q[key]);
    if (!value) continue;
    const t = parseTime(value);
    if (t === undefined) return { ok: false, error: `${key}: a date such as 2026-11-21T10:00, or epoch milliseconds.` };
    if (key === 'start') filter.from = t;
    else filter.to = t;
    form[key] = value;
  }
  const instance = one(q.instance);
  if (instance) {
    if (instance.length > 200) return { ok: false, error: 'instance: at most 200 characters.' };
    filter.instance = form.instance = instance;
  }
  const type = one(q.type);
  if (type) {
    if (!/^[a-z]{1,20}$/.test(type)) return { ok: false, error: 'type: a word such as "request".' };
    filter.type = form.type = type;
  }
  const user = one(q.user);
  if (user) {
    if (user.length > 200) return { ok: false, error: 'user: at most 200 characters.' };
    filter.user = form.user = user;
  }
  const operation = one(q.operation);
  if (operation) {
    if (operation.length > 200) return { ok: false, error: 'operation: at most 200 characters.' };
    filter.label = form.operation = operation;
  }
  const trace = one(q.trace_id);
  if (trace) {
    if (!/^[0-9a-f]{32}$/.test(trace)) return { ok: false, error: 'trace_id: an OpenTelemetry trace id, 32 lowercase hex characters.' };
    filter.trace = form.trace_id = trace;
  }
  const parent = one(q.parent);
  if (parent) {
    if (!isToken(parent)) return { ok: false, error: 'parent: a profile token.' };
    filter.parent = form.parent = parent;
  }
  const limit = one(q.limit);
  if (limit) {
    if (!(LIMITS as readonly number[]).includes(Number(limit))) return { ok: false, error: `limit: one of ${LIMITS.join(', ')}.` };
    filter.limit = Number(limit);
    form.limit = limit;
  }
  const sort = one(q.sort);
  if (sort) {
    if (sort !== 'time' && sort !== 'duration') return { ok: false, error: 'sort: time (newest first) or duration (slowest first).' };
    if (sort === 'duration') filter.sort = form.sort = sort;
  }
  const before = one(q.before);
  if (before) {
    if (!isToken(before)) return { ok: false, error: 'before: a profile token.' };
    filter.before = before;
  }
  return { ok: true, filter, form };
}
