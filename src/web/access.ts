import type { Request, Response } from 'express';
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { ResolvedOptions } from '../options.js';
import { isLoopbackHost } from '../recording/url.js';

export const SECRET_COOKIE = 'web_profiler_secret';
export const SECRET_HEADER = 'x-profiler-secret';
export const SECRET_QUERY = '_profiler_secret';

/** A refusal with `askKey` is one the profiler's key would turn: its page offers a field for it. */
export type Verdict = { ok: true } | { ok: false; reason: string; askKey?: boolean };

const LOOPBACK_ADDRESS = /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/;
export { isLoopbackHost };

/**
 * Headers a proxy adds on behalf of the client it forwards. A request carrying any of them came
 * through something else on this machine, so its loopback peer address says nothing of the client.
 */
export const PROXY_HEADERS = [
  'forwarded', 'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'x-real-ip', 'via',
  'x-client-ip', 'true-client-ip', 'cf-connecting-ip', 'x-cluster-client-ip', 'fastly-client-ip', 'x-original-forwarded-for',
];

/** The socket's peer, not req.ip: X-Forwarded-For is whatever the client wrote. */
export const isLoopbackClient = (req: Request): boolean => LOOPBACK_ADDRESS.test(req.socket?.remoteAddress ?? '');

const isProxied = (req: Request): boolean => PROXY_HEADERS.some((name) => req.headers[name] !== undefined);

const hostName = (req: Request) => (req.headers.host ?? '').toLowerCase().replace(/:\d+$/, '');

const OK: Verdict = { ok: true };

/**
 * Who may see profiles. A user's authorize() decides alone, and only `true` (or a promise of it)
 * lets a request in. Otherwise a client presenting the key gets in, loopback ones included: a
 * proxy on this machine that adds no forwarding header (nginx's bare proxy_pass, a dev server's
 * proxy) makes any client look local. With trustLocal, a plainly local client gets in without
 * it: a loopback peer, reached through a loopback or allowed host name (a page on a rebinding
 * domain sends its own Host), that did not come through a proxy that says so.
 */
export function checkAccess(req: Request, options: ResolvedOptions): Verdict | Promise<Verdict> {
  if (options.authorize) return byAuthorize(req, options.authorize);
  if (options.secret && presentedSecret(req, options.secret)) return OK;
  if (!options.trustLocal) return { ok: false, reason: keyWanted(options), askKey: true };
  const how = options.secret ? 'present the profiler\'s key' : 'set WEB_PROFILER_SECRET (or the secret option) and present it';
  if (!isLoopbackClient(req)) {
    return { ok: false, reason: `The profiler lets in local clients without its key only; others must ${how}.` };
  }
  if (isProxied(req)) {
    return { ok: false, reason: `This request came through a proxy (it carries a Forwarded or X-Forwarded-* header), so it may come from anywhere: ${how}.` };
  }
  const host = hostName(req);
  if (!isLoopbackHost(host) && !options.allowedHosts.includes(host)) {
    return { ok: false, reason: `The profiler does not answer to the host name "${host}". Add it to allowedHosts if it is yours.` };
  }
  return OK;
}

/** Where the key is; not the path of its file, which a proxied stranger would read too. */
function keyWanted(options: ResolvedOptions): string {
  const how = `Present it once: open any profiler page with ?${SECRET_QUERY}=<key> (a cookie keeps it), or send it in the ${SECRET_HEADER} header.`;
  if (!options.keyMade) {
    return `The profiler needs its key (WEB_PROFILER_SECRET, or the secret option). ${how}`;
  }
  return `The profiler needs its key. The server printed a link that carries it on its console (stderr) at its first request, and keeps it beside its profile store. ${how}`;
}

const REFUSED: Verdict = { ok: false, reason: 'The profiler refused this request (authorize).' };

async function byAuthorize(req: Request, authorize: NonNullable<ResolvedOptions['authorize']>): Promise<Verdict> {
  try {
    return (await authorize(req)) === true ? OK : REFUSED;
  } catch {
    return { ok: false, reason: 'The profiler refused this request (authorize threw).' };
  }
}

function presentedSecret(req: Request, secret: string): boolean {
  const header = req.headers[SECRET_HEADER];
  if (typeof header === 'string' && same(header, secret)) return true;
  const cookie = cookieValue(req.headers.cookie, cookieName(secret));
  if (cookie !== undefined && same(cookie, cookieFor(secret))) return true;
  const query = querySecret(req);
  return query !== undefined && same(query, secret);
}

const querySecret = (req: Request): string | undefined => {
  const value = req.query?.[SECRET_QUERY];
  return typeof value === 'string' ? value : undefined;
};

/** Compared through a hash so that neither the length nor the content leaks through timing. */
function same(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/**
 * Named after its key, so that two apps on one host name (localhost, any port) each keep theirs:
 * a browser sends a host's cookies to all its ports.
 */
const cookieName = (secret: string) => `${SECRET_COOKIE}_${createHmac('sha256', secret).update('cookie name').digest('hex').slice(0, 8)}`;

/** What the cookie holds: derived from the secret, so a stolen cookie is not the secret itself. */
const cookieFor = (secret: string) => createHmac('sha256', secret).update('express-web-profiler access cookie').digest('base64url');

function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const pair of header.split(';')) {
    const eq = pair.indexOf('=');
    if (eq > 0 && pair.slice(0, eq).trim() === name) return pair.slice(eq + 1).trim();
  }
  return undefined;
}

/** Where a key carried on to the app's other host names sends the browser back to (see nextStop). */
const RETURN_QUERY = '_profiler_back';

/**
 * A secret given once in the query becomes a cookie, and the browser is sent on to the same
 * address without it, so the secret does not stay in the address bar, the history or a Referer.
 * Returns true when it answered.
 */
export function exchangeQuerySecret(req: Request, res: Response, options: ResolvedOptions): boolean {
  const query = querySecret(req);
  if (!options.secret || query === undefined || !same(query, options.secret)) return false;
  // Thirty days: the key outlives the process (it is kept beside the store), and a developer opens the link once.
  res.append('Set-Cookie', `${cookieName(options.secret)}=${cookieFor(options.secret)}; Path=/; Max-Age=2592000; HttpOnly; SameSite=Strict${req.secure ? '; Secure' : ''}`);
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.redirect(303, nextStop(req, options.secret, options.allowedHosts));
  return true;
}

/**
 * A browser keeps cookies per host name, and an app that serves several (an admin host beside its
 * API) names the others in allowedHosts: the key presented on one is carried on to each of those
 * after it in turn, the last one sending the browser back to where it was first presented, without
 * the key. Back goes only to this app's own names: a loopback one or an allowed one.
 */
function nextStop(req: Request, secret: string, allowedHosts: string[]): string {
  const url = new URL(req.originalUrl, 'http://x');
  url.searchParams.delete(SECRET_QUERY);
  const back = url.searchParams.get(RETURN_QUERY);
  url.searchParams.delete(RETURN_QUERY);
  const here = url.pathname + url.search;
  const scheme = req.secure ? 'https' : 'http';
  const port = /:\d+$/.exec(req.headers.host ?? '')?.[0] ?? '';
  const next = allowedHosts[allowedHosts.indexOf(hostName(req)) + 1];
  if (next !== undefined) {
    const returnTo = back ?? `${scheme}://${req.headers.host}${here}`;
    return `${scheme}://${next}${port}${url.pathname}?${SECRET_QUERY}=${encodeURIComponent(secret)}&${RETURN_QUERY}=${encodeURIComponent(returnTo)}`;
  }
  return back !== null && ownAddress(back, allowedHosts) ? back : here;
}

function ownAddress(address: string, allowedHosts: string[]): boolean {
  try {
    const { protocol, hostname } = new URL(address);
    return (protocol === 'http:' || protocol === 'https:') && (isLoopbackHost(hostname) || allowedHosts.includes(hostname));
  } catch {
    return false;
  }
}
