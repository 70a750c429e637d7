import type { Request, RequestHandler } from 'express';
import { requestUrl } from '../recording/url.js';
import { MethodNotAllowedError, NotFoundError } from './http-error.js';
import { allowedMethods } from './routes.js';

/**
 * What Symfony's router does on a miss: try the path with its trailing slash toggled (301 for
 * GET and HEAD), then 405 with Allow when the path exists for other methods, else 404 with
 * `No route found for "GET http://host/path"`. The error goes on to errorHandler.
 */
export function notFound(): RequestHandler {
  return function notFound(req, res, next) {
    const path = req.path;
    const method = req.method;
    // 405 only when the method is what is wrong: a matching route that passed on (next()) is a 404.
    const allowed = allowedMethods(req.app, path);
    const passedOn = allowed.includes(method) || allowed.includes('*');
    // The toggled path is tried only when this one has no route for the method (else it would lead back here).
    if ((method === 'GET' || method === 'HEAD') && !passedOn) {
      const other = path.endsWith('/') ? path.slice(0, -1) : `${path}/`;
      if (other && isLocalPath(other) && allowedMethods(req.app, other).some((m) => m === method || m === '*')) {
        const query = req.originalUrl.indexOf('?');
        const base = (req.baseUrl ?? '') + other;
        res.redirect(301, query < 0 ? base : base + req.originalUrl.slice(query));
        return;
      }
    }
    // OPTIONS on a path that has routes is the router's to answer (200 with Allow), as it does bare.
    if (method === 'OPTIONS' && allowed.length > 0) return next();
    if (allowed.length > 0 && !passedOn) {
      next(new MethodNotAllowedError(`${noRouteMessage(req)}: Method Not Allowed (Allow: ${allowed.join(', ')})`, allowed));
      return;
    }
    next(new NotFoundError(noRouteMessage(req)));
  };
}

export function noRouteMessage(req: Request): string {
  const referer = req.get('referer');
  return `No route found for "${req.method} ${requestUrl(req, false)}"${referer ? ` (from "${referer}")` : ''}`;
}

/** A Location of `//host/…` or `/\host/…` would leave the site: never redirect there. */
const isLocalPath = (path: string) => path.startsWith('/') && !/^\/[\/\\]/.test(path) && !/[\r\n]/.test(path);
