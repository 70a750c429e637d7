import type { Check } from '../recording/checks.js';
import type { ErrorInfo } from '../errors/describe.js';
import type { CorePanel } from './collector.js';
import type { Snapshot } from './snapshot.js';
import { anonymousWho, userLabel, type Who } from '../redaction/who.js';
import { mountedLine } from '../recording/checks.js';
import { CORS_OPTIONS } from '../recording/cors-options.js';

/** A check as the panel shows it: where the profiler learnt of it. */
export interface ShownCheck extends Check {
  /** recorded: the library told it as it ran; error: the error it passed to Express; response: what the app answered with; headers: read off the exchange; middleware: read off the exchange, beside the options of the cors() middleware it passed. */
  from: 'recorded' | 'error' | 'response' | 'headers' | 'middleware';
}

export interface SecurityData {
  /** Who made the request, and how they were known: see redaction/who.ts. */
  who?: Who;
  checks: ShownCheck[];
  refused: number;
}

/**
 * Who was let in and who was refused, and why: the checks recorded as they ran (passport's
 * strategies, jsonwebtoken, express-rate-limit, express-validator), and those read off what was
 * stored: an error a library passed to Express (body-parser's limits, a CSRF check, celebrate,
 * jose), a validation's answer (zod's issues, joi's details), a cross-origin call the answer does
 * not allow.
 */
export const security: CorePanel<SecurityData> = {
  id: 'security',
  title: 'Security',
  collect(s) {
    const made = s.checks?.find((c) => c.library === 'cors' && c.reason === CORS_OPTIONS);
    const checks: ShownCheck[] = (s.checks ?? []).filter((c) => c !== made).map((c) => ({ ...c, from: 'recorded' }));
    const thrown = s.exception?.chain[0];
    if (thrown !== undefined && s.response.status >= 400 && s.response.status < 500) {
      const found = fromError(thrown, mountedLine(s.response.answeredBy));
      // A failure recorded as it ran (zod's parse() that threw) is the same one its error tells of.
      if (found !== undefined && !checks.some((c) => c.library === found.library && (c.reason === found.reason || c.verdict === 'refused'))) {
        // celebrate validates with joi: its error, which names the part of the request, stands for joi's.
        if (found.library === 'celebrate') checks.splice(0, checks.length, ...checks.filter((c) => c.library !== 'joi'));
        checks.push({ ...found, from: 'error' });
      }
    }
    if (s.exception === undefined && s.response.status >= 400 && !checks.some((c) => c.verdict === 'refused')) {
      const found = fromAnswer(s);
      if (found !== undefined) checks.push({ ...found, from: 'response' });
    }
    const cors = corsOf(s, made);
    if (cors !== undefined) checks.push({ ...cors, from: made === undefined ? 'headers' : 'middleware' });
    // A refusal the answer or the error tells after all says why: a library not followed is no longer the news.
    const told = (c: Check) => c.verdict === 'unseen' && checks.some((o) => o.verdict === 'refused');
    if (checks.some(told)) checks.splice(0, checks.length, ...checks.filter((c) => !told(c)));
    const who = s.who ?? anonymousWho(s.request.headers);
    if (checks.length === 0 && who === undefined) return undefined;
    for (const c of checks) c.reason = reasonOf(c);
    return { ...(who === undefined ? {} : { who }), checks, refused: checks.filter((c) => c.verdict === 'refused' || c.verdict === 'error').length };
  },
  // The checks it met; for a request that met none, who made it.
  badge: (data) => (data.checks.length > 0 || data.who === undefined ? data.checks.length : (userLabel(data.who) ?? data.who.via)),
};

/** body-parser's (and raw-body's) error types: what express.json(), urlencoded() and raw() refuse with. */
const BODY_TYPES = /^(entity\.(too\.large|parse\.failed|verify\.failed)|encoding\.unsupported|charset\.unsupported|request\.(aborted|size\.invalid)|stream\.(encoding\.set|not\.readable)|parameters\.too\.many)$/;

/** A library's refusal passed to next(err): named by the error's own marks, or by the package its stack starts in. */
function fromError(e: ErrorInfo, mounted: string | undefined): Check | undefined {
  const d = e.details ?? {};
  const at = e.frames.find((f) => f.kind === 'app');
  // The app's line in its stack, or where the app mounted the layer that passed it on.
  const line = at === undefined ? mounted : `${at.file}:${at.line}`;
  const refusal = (library: string, fields: Record<string, unknown> = d): Check => ({ library, verdict: 'refused', reason: e.message, fields: { error: e.class, ...fields }, at: line });
  if (typeof d.type === 'string' && BODY_TYPES.test(d.type)) return refusal('body-parser');
  if (e.code === 'EBADCSRFTOKEN') return refusal(packageIn(e) ?? 'csrf');
  if (typeof e.code === 'string' && e.code.startsWith('ERR_JW')) return refusal('jose', { code: e.code, ...d });
  if (['TokenExpiredError', 'JsonWebTokenError', 'NotBeforeError'].includes(e.class)) return refusal('jsonwebtoken');
  if (e.class === 'CelebrateError' || packageIn(e) === 'celebrate') return refusal('celebrate', { errors: celebrateErrors(d.details) });
  if (e.class === 'ZodError') return refusal('zod');
  const library = packageIn(e);
  return library === undefined ? undefined : refusal(library);
}

/** celebrate's details as its fields: a joi error per part of the request (body, query, params...), each with joi's own details. */
function celebrateErrors(details: unknown): unknown[] {
  if (details === null || typeof details !== 'object') return [];
  return Object.entries(details as Record<string, { details?: unknown }>).flatMap(([location, joi]) =>
    (Array.isArray(joi?.details) ? joi.details : []).map((i: Issue) => ({ field: Array.isArray(i.path) ? i.path.join('.') : '', location, message: i.message, type: i.type })));
}

/**
 * The package whose code made the error: its innermost frame's, when that is in node_modules and
 * not the profiler's own. An error made by the app or the profiler (its notFound) and passed up
 * through the router is no library's refusal.
 */
function packageIn(e: ErrorInfo): string | undefined {
  const made = e.frames[0];
  if (made === undefined || made.profiler) return undefined;
  const m = /[\\/]node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)[\\/]/.exec(made.file);
  return m === null ? undefined : m[1].replace('\\', '/');
}

type Issue = { path?: unknown; message?: unknown; code?: unknown; type?: unknown };

/**
 * A validation the app answered with, as the library gave it: zod's issues (`{ issues }`,
 * `{ error: { issues } }`, or the array), zod's flatten() (`fieldErrors`), joi's details, and
 * celebrate's `validation`. Named by shape: zod's issues carry a `code`, joi's a dotted `type`.
 */
function fromAnswer(s: Snapshot): Check | undefined {
  const json = s.response.body.json;
  if (json === undefined || json === null || typeof json !== 'object') return undefined;
  // Its reason is made of its fields' messages (reasonOf); its line, the app's that answered.
  const refused = (library: string, errors: unknown[]): Check => ({ library, verdict: 'refused', reason: '', fields: { errors }, at: s.response.answeredAt?.[0] });
  const o = json as Record<string, unknown>;
  const error = (o.error !== null && typeof o.error === 'object' ? o.error : {}) as Record<string, unknown>;
  const candidates = [json, o.issues, error.issues, o.errors, o.details, error.details];
  for (const list of candidates) {
    if (!Array.isArray(list) || list.length === 0) continue;
    const issues = list.filter((i): i is Issue => i !== null && typeof i === 'object' && typeof (i as Issue).message === 'string');
    if (issues.length === 0) continue;
    const joi = issues.every((i) => typeof i.type === 'string' && i.type.includes('.'));
    const zod = issues.every((i) => typeof i.code === 'string' && Array.isArray(i.path));
    if (!joi && !zod) continue;
    return refused(joi ? 'joi' : 'zod', issues.map((i) => ({ field: Array.isArray(i.path) ? i.path.join('.') : String(i.path ?? ''), message: i.message, ...(joi ? { type: i.type } : { code: i.code }) })));
  }
  const fieldErrors = (o.fieldErrors ?? error.fieldErrors) as Record<string, unknown> | undefined;
  if (fieldErrors !== null && typeof fieldErrors === 'object' && !Array.isArray(fieldErrors)) {
    const errors = Object.entries(fieldErrors).flatMap(([field, messages]) => (Array.isArray(messages) ? messages : [messages]).map((message) => ({ field, message })));
    if (errors.length > 0) return refused('zod', errors);
  }
  const validation = o.validation as Record<string, { source?: unknown; keys?: unknown; message?: unknown }> | undefined;
  if (validation !== null && typeof validation === 'object') {
    const errors = Object.values(validation).filter((v) => v !== null && typeof v === 'object' && typeof v.message === 'string').map((v) => ({ field: Array.isArray(v.keys) ? v.keys.join(', ') : '', location: v.source, message: v.message }));
    if (errors.length > 0) return refused('celebrate', errors);
  }
  return undefined;
}

/**
 * A cross-origin call the answer does not allow: the browser keeps the answer from the page.
 * Read off the exchange: the Origin sent, and the Access-Control-Allow-* headers that came back
 * (the cors middleware answers a refused origin without them, and passes the request on).
 */
function corsOf(s: Snapshot, made: Check | undefined): Check | undefined {
  const origin = first(s.request.headers.origin);
  if (origin === undefined || origin === 'null' || sameOrigin(origin, s.url)) return undefined;
  const allowOrigin = first(s.response.headers['access-control-allow-origin']);
  const preflight = s.request.method === 'OPTIONS' ? first(s.request.headers['access-control-request-method']) : undefined;
  // The cors() middleware's own line and the list it checked, when one ran (see recording/cors-options.ts).
  const at = made?.at ?? mountedLine(s.response.answeredBy);
  const options = made?.fields ?? {};
  if (allowOrigin === undefined) {
    return { library: 'cors', verdict: 'refused', reason: `origin ${origin} is not allowed: the answer has no Access-Control-Allow-Origin`, fields: { origin, ...(preflight === undefined ? {} : { method: preflight }), ...options }, at };
  }
  if (allowOrigin !== '*' && allowOrigin !== origin) {
    return { library: 'cors', verdict: 'refused', reason: `origin ${origin} is not allowed: the answer allows ${allowOrigin}`, fields: { origin, ...options, allowed: allowOrigin }, at };
  }
  if (preflight !== undefined) {
    const methods = first(s.response.headers['access-control-allow-methods']);
    if (methods !== undefined && !methods.split(/\s*,\s*/).some((m) => m.toUpperCase() === preflight.toUpperCase())) {
      return { library: 'cors', verdict: 'refused', reason: `method ${preflight} is not allowed: the answer allows ${methods}`, fields: { origin, method: preflight, allowed: methods }, at };
    }
  }
  return undefined;
}

const first = (value: unknown): string | undefined => (Array.isArray(value) ? first(value[0]) : typeof value === 'string' ? value : undefined);

function sameOrigin(origin: string, url: string): boolean {
  try {
    return new URL(url).origin === new URL(origin).origin;
  } catch {
    return false;
  }
}

/** A validation's reason: each failing field with its message, as the library worded it. */
function reasonOf(check: Check): string {
  const errors = check.fields?.errors;
  if (!Array.isArray(errors) || errors.length === 0) return check.reason;
  return errors.map((e: { field?: unknown; message?: unknown }) => (e.field ? `${String(e.field)}: ${String(e.message)}` : String(e.message))).join('; ');
}
