import type { Request, Response } from 'express';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { ResolvedOptions } from '../options.js';

export const SECRET_COOKIE = 'web_profiler_secret';
export const SECRET_HEADER = 'x-profiler-secret';
export const SECRET_QUERY = '_profiler_secret';

export type Verdict = { ok: true } | { ok: false; reason: string };

const LOOPBACK_ADDRESS = /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/;
const LOOPBACK_HOST = /^(localhost|[^.]+\.localhost|127\.\d+\.\d+\.\d+|\[::1\])$/i;

/** The socket's peer, not req.ip: X-Forwarded-For is whatever the client wrote. */
export const isLoopbackClient = (req: Request): boolean => LOOPBACK_ADDRESS.test(req.socket?.remoteAddress ?? '');

const hostName = (req: Request) => (req.headers.host ?? '').toLowerCase().replace(/:\d+$/, '');

/**
 * Who may see profiles. A user's authorize() decides alone. Otherwise: loopback clients, reached
 * through a loopback or allowed host name (a page on a rebinding domain sends its own Host), or any
 * client presenting the secret.
 */
export function checkAccess(req: Request, options: ResolvedOptions): Verdict {
  if (options.authorize) {
    try {
      return options.authorize(req) ? { ok: true } : { ok: false, reason: 'The profiler refused this request (authorize).' };
    } catch {
      return { ok: false, reason: 'The profiler refused this request (authorize threw).' };
    }
  }
  if (options.secret && presentedSecret(req, options.secret)) return { ok: true };
  if (!isLoopbackClient(req)) {
    return { ok: false, reason: options.secret
      ? 'The profiler answers loopback clients, and others that present its secret.'
      : 'The profiler answers loopback clients only. Set WEB_PROFILER_SECRET (or the secret option) to let others in.' };
  }
  const host = hostName(req);
  if (!LOOPBACK_HOST.test(host) && !options.allowedHosts.includes(host)) {
    return { ok: false, reason: `The profiler does not answer to the host name "${host}". Add it to allowedHosts if it is yours.` };
  }
  return { ok: true };
}

function presentedSecret(req: Request, secret: string): boolean {
  const query = typeof req.query?.[SECRET_QUERY] === 'string' ? (req.query[SECRET_QUERY] as string) : undefined;
  const candidates = [req.headers[SECRET_HEADER], cookieValue(req.headers.cookie, SECRET_COOKIE), query];
  return candidates.some((value) => typeof value === 'string' && sameSecret(value, secret));
}

/** Compared through a hash so that neither the length nor the content leaks through timing. */
function sameSecret(given: string, secret: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(secret).digest();
  return timingSafeEqual(a, b);
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const pair of header.split(';')) {
    const eq = pair.indexOf('=');
    if (eq > 0 && pair.slice(0, eq).trim() === name) {
      try {
        return decodeURIComponent(pair.slice(eq + 1).trim());
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/** A secret given once in the query becomes a cookie, so links inside the profiler keep working. */
export function rememberSecret(req: Request, res: Response, options: ResolvedOptions): void {
  const query = req.query?.[SECRET_QUERY];
  if (options.secret && typeof query === 'string' && sameSecret(query, options.secret)) {
    res.append('Set-Cookie', `${SECRET_COOKIE}=${encodeURIComponent(query)}; Path=/; HttpOnly; SameSite=Strict${req.secure ? '; Secure' : ''}`);
  }
}
