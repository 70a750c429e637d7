import type { Request } from 'express';
import type { ResolvedOptions } from '../options.js';
import type { RequestContext } from '../recording/context.js';
import type { Profile } from '../storage/profile.js';
import type { Collector } from './collector.js';
import { redactText } from './redact.js';

/** scheme://host[:port]/path?query as the client asked for it. */
export function requestUrl(req: Request, withQuery = true): string {
  const url = req.originalUrl ?? req.url ?? '/';
  const host = req.get('host') ?? 'localhost';
  return `${req.protocol}://${host}${withQuery ? url : url.split('?')[0]}`;
}

/** A collector that fails fails on every request alike: told once per collector and message. */
const told = new WeakMap<ResolvedOptions, Set<string>>();
function tellOnce(options: ResolvedOptions, message: string): void {
  let seen = told.get(options);
  if (!seen) told.set(options, (seen = new Set()));
  if (seen.has(message)) return;
  seen.add(message);
  options.onError(message);
}

/**
 * Turn a finished request into a Profile. A collector that throws costs its own panel only:
 * the error is told once through onError and noted in every profile it spoiled.
 */
export function buildProfile(ctx: RequestContext, collectors: Collector[], options: ResolvedOptions): Profile {
  const req = ctx.req as Request;
  const profile: Profile = {
    token: ctx.token,
    parent: ctx.parent,
    ip: safe(() => req.ip, undefined) ?? ctx.remoteAddress ?? 'unknown',
    method: req.method ?? 'GET',
    url: redactText(safe(() => requestUrl(req), req.url ?? '/'), options.redactKeys),
    status: ctx.res.statusCode,
    time: ctx.time,
    duration: Math.round(ctx.end * 1000) / 1000,
    type: 'request',
    collectors: {},
  };
  for (const collector of collectors) {
    try {
      const data = collector.collect(ctx, options);
      if (data !== undefined) profile.collectors[collector.id] = data;
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      tellOnce(options, `collector "${collector.id}" failed: ${message}`);
      (profile.collectorErrors ??= {})[collector.id] = message;
    }
  }
  return profile;
}

function safe<T>(fn: () => T, fallback: T): T {
  try {
    return fn();
  } catch {
    return fallback;
  }
}
