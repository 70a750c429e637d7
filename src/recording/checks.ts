import type { RequestContext, WorkContext } from './context.js';
import { bounded } from './plain.js';
import { mountOf } from './mounts.js';

/**
 * A check a request met, as the library that made it said: an authentication (a passport
 * strategy, a token's verification), a rate limit, a validation. Refusals that throw nothing
 * (a 401 from passport, a 429, a 422) are told here, where they happen; the pages lead with them.
 */
export interface Check {
  library: string;
  /** `unseen`: a library that may have refused the request is loaded, and its verdicts cannot be seen (a zod the profiler does not follow): what to do about it. */
  verdict: 'passed' | 'refused' | 'error' | 'unseen';
  /** The reason as the library gave it: `Incorrect password.`, `jwt expired`, `invalid csrf token`. */
  reason: string;
  /** What else it said, by name: the strategy, the limit and what was left, each failing field. */
  fields?: Record<string, unknown>;
  /** The app's line that mounted the middleware or called the library. */
  at?: string;
}

/** More than this in one request is a loop, not a sign-in: the rest are counted by the panel's absence of them. */
const MAX_CHECKS = 50;
const FIELDS_BUDGET = 4 * 1024;

export function noteCheck(ctx: WorkContext, check: Check): void {
  const checks = (ctx.checks ??= []);
  if (checks.length >= MAX_CHECKS) return;
  boundFields(check);
  checks.push(check);
}

/** The library's own objects (a user, a token's payload, a validation's issues): copied within a budget, as they are at this moment. */
export function boundFields(check: Check): void {
  if (check.fields !== undefined) check.fields = bounded(check.fields, FIELDS_BUDGET).value as Record<string, unknown>;
}

/** The layer running now (the last one entered), as `name` TAB `the app's line that mounted it`. */
export function layerNamed(ctx: WorkContext): string | undefined {
  const trail = (ctx as Partial<RequestContext>).trail;
  const layer = trail?.[trail.length - 2] as { name?: unknown } | undefined;
  if (layer === undefined || layer === null) return undefined;
  const name = typeof layer.name === 'string' && layer.name !== '' && layer.name !== '<anonymous>' ? layer.name : 'anonymous';
  const at = mountOf(layer);
  return at === undefined ? name : `${name}\t${at}`;
}

/** A layerNamed() string read back: the layer's name, and the app's line when it has one. */
export function layerParts(named: string): { name: string; at?: string } {
  const tab = named.indexOf('\t');
  return tab < 0 ? { name: named } : { name: named.slice(0, tab), at: named.slice(tab + 1) };
}

/** The app's line in a layerNamed() string, when it has one. */
export const mountedLine = (named: string | undefined): string | undefined => (named === undefined ? undefined : layerParts(named).at);

/**
 * A failure going out that no exception explains (its answering layer already in `answeredBy`): what the libraries that keep their verdict on
 * the request left there. express-rate-limit's `req.rateLimit` (its info, whatever the app
 * named it: found by shape), express-validator's contexts (each field that failed).
 */
export function checksAtAnswer(ctx: RequestContext, status: number): void {
  try {
    readChecks(ctx, status);
  } catch (err) {
    // Inside the app's writeHead: whatever these objects hold, the response goes out.
    ctx.recorder.failed(err);
  }
}

function readChecks(ctx: RequestContext, status: number): void {
  const req = ctx.req as unknown as Record<string, unknown>;
  const mountedAt = mountedLine(ctx.answeredBy);
  if (status === 429) {
    const info = rateLimitOf(req);
    if (info !== undefined) {
      noteCheck(ctx, {
        library: 'express-rate-limit',
        verdict: 'refused',
        reason: `${info.used} counted against a limit of ${info.limit}`,
        fields: { limit: info.limit, used: info.used, remaining: info.remaining, resetTime: info.resetTime instanceof Date ? info.resetTime.toISOString() : info.resetTime, key: info.key },
        at: mountedAt,
      });
    }
  }
  const contexts = req['express-validator#contexts'];
  if (Array.isArray(contexts)) {
    const failed: { field: string; location?: unknown; message: unknown; value?: unknown }[] = [];
    for (const context of contexts) {
      for (const e of ((context as { errors?: unknown[] })?.errors ?? []) as Record<string, unknown>[]) {
        failed.push({ field: String(e.path ?? e.param ?? ''), location: e.location, message: e.msg, value: e.value });
      }
    }
    if (failed.length > 0) {
      noteCheck(ctx, {
        library: 'express-validator',
        verdict: 'refused',
        // Its fields' messages make the reason when the page reads it (see collectors/security.ts): a field named `password` is no secret of its own.
        reason: 'validation failed',
        fields: { errors: failed },
        at: ctx.answeredAt?.[0] ?? mountedAt,
      });
    }
  }
}

interface RateLimitInfo {
  limit: unknown;
  used: unknown;
  remaining: unknown;
  resetTime: unknown;
  key?: unknown;
}

/** express-rate-limit's info object: under `rateLimit` unless the app chose another name, so it is known by its shape. */
function rateLimitOf(req: Record<string, unknown>): RateLimitInfo | undefined {
  const isInfo = (v: unknown): v is RateLimitInfo => v !== null && typeof v === 'object' && 'limit' in v && 'used' in v && 'remaining' in v;
  // Own data properties only: a getter of the app's is never run from here.
  for (const key of Object.keys(req)) {
    const value = Object.getOwnPropertyDescriptor(req, key)?.value;
    if (isInfo(value)) return value;
  }
  return undefined;
}
