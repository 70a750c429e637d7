import type { Request } from 'express';
import type { TLSSocket } from 'node:tls';

/**
 * scheme://host as the client asked for it. req.protocol honours the app's trust proxy setting,
 * but it can only differ from the socket's own scheme when an X-Forwarded-Proto header came:
 * without one, the socket answers, and every request skips the trust-proxy walk.
 */
export function originOf(req: Request): string {
  try {
    const scheme = req.headers['x-forwarded-proto'] === undefined ? ((req.socket as TLSSocket | undefined)?.encrypted ? 'https' : 'http') : req.protocol;
    return `${scheme}://${req.headers.host ?? 'localhost'}`;
  } catch {
    return 'http://localhost';
  }
}

/** scheme://host[:port]/path?query as the client asked for it. */
export function requestUrl(req: Request, withQuery = true): string {
  const url = req.originalUrl ?? req.url ?? '/';
  return originOf(req) + (withQuery ? url : url.split('?')[0]);
}

const LOOPBACK_HOST = /^(localhost|[^.]+\.localhost|127\.\d+\.\d+\.\d+|\[::1\])$/i;

/** A host name (without port) that names this machine. */
export const isLoopbackHost = (host: string): boolean => LOOPBACK_HOST.test(host);
