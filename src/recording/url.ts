import type { Request } from 'express';

/** scheme://host as the client asked for it (req.protocol honours the app's trust proxy setting). */
export function originOf(req: Request): string {
  try {
    return `${req.protocol}://${req.get('host') ?? 'localhost'}`;
  } catch {
    return 'http://localhost';
  }
}

/** scheme://host[:port]/path?query as the client asked for it. */
export function requestUrl(req: Request, withQuery = true): string {
  const url = req.originalUrl ?? req.url ?? '/';
  return originOf(req) + (withQuery ? url : url.split('?')[0]);
}
