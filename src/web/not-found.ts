import type { ErrorRequestHandler, Request, RequestHandler, Response } from 'express';
import { STATUS_CODES } from 'node:http';
import { requestUrl } from '../recording/url.js';
import { preferredFormat } from './error-handler.js';
import { HttpError, MethodNotAllowedError, NotFoundError } from '../errors/http-error.js';
import { allowedMethods } from './routes.js';

/**
 * What Symfony's router does on a miss: try the path with its trailing slash toggled (301 for
 * GET and HEAD), else 404 with `No route found for "GET http://host/path"`. A path that has
 * routes for other methods is a 404 too, as bare Express answers it, its message naming them;
 * with `methodNotAllowed`, a 405 that always carries Allow. A browser gets the debug page at
 * once (in debug mode); any other client's error goes on to the app's error handlers, which
 * answer in the app's own shape, and the status stays the 404 or 405 (see keepStatus).
 */
export function notFound(debugPage: ErrorRequestHandler | undefined, methodNotAllowed = false): RequestHandler {
  const fail = (err: HttpError, req: Request, res: Response, next: (err: unknown) => void) => {
    if (debugPage !== undefined && preferredFormat(req) === 'html') return debugPage(err, req, res, next);
    keepStatus(res, err);
    // Express's final handler (and many an app's) prints err.stack outside production: it says
    // what bare Express says, not the profiler's paths nor the Referer the client sent.
    err.stack = `Cannot ${req.method} ${encodeUrl(resourceName(req.originalUrl ?? req.url))}`;
    next(err);
  };
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
      if (!methodNotAllowed) return fail(new NotFoundError(`${noRouteMessage(req)}: the path answers ${allowed.join(', ')}`), req, res, next);
      // RFC 9110: a 405 names the methods the path has, whoever writes the answer.
      if (!res.headersSent) res.setHeader('Allow', allowed.join(', '));
      fail(new MethodNotAllowedError(`${noRouteMessage(req)}: Method Not Allowed (Allow: ${allowed.join(', ')})`, allowed), req, res, next);
      return;
    }
    fail(new NotFoundError(noRouteMessage(req)), req, res, next);
  };
}

/**
 * Many apps end in a catch-all handler that answers 500 for any error not of their own classes:
 * passed on, the miss would go out as a 500. The response's head keeps the body the app made and
 * takes the miss's status (and Allow) instead of a 5xx.
 */
function keepStatus(res: Response, err: HttpError): void {
  const writeHead = res.writeHead;
  res.writeHead = function (this: Response, statusCode: number, ...rest: unknown[]) {
    res.writeHead = writeHead;
    if (statusCode >= 500) {
      statusCode = err.status;
      if (typeof rest[0] === 'string') rest[0] = STATUS_CODES[statusCode];
      else res.statusMessage = STATUS_CODES[statusCode]!;
      for (const [name, value] of Object.entries(err.headers)) if (!res.hasHeader(name)) res.setHeader(name, value);
    }
    return (writeHead as (...args: unknown[]) => Response).call(this, statusCode, ...rest);
  } as typeof res.writeHead;
}

export function noRouteMessage(req: Request): string {
  const referer = req.get('referer');
  return `No route found for "${req.method} ${requestUrl(req, false)}"${referer ? ` (from "${referer}")` : ''}`;
}

/** A Location of `//host/…` or `/\host/…` would leave the site: never redirect there. */
const isLocalPath = (path: string) => path.startsWith('/') && !/^\/[\/\\]/.test(path) && !/[\r\n]/.test(path);

/** The path of a request's URL, as Express's final handler names it (parseurl's pathname). */
function resourceName(url: string): string {
  if (url.startsWith('/')) return url.replace(/[?#].*$/s, '');
  try {
    return new URL(url).pathname;
  } catch {
    return 'resource';
  }
}

/** encodeurl's encoding, which Express's final handler applies: characters a URL may not hold, existing escapes kept. */
const ENCODE_CHARS = /(?:[^\x21\x23-\x3B\x3D\x3F-\x5F\x61-\x7A\x7C\x7E]|%(?:[^0-9A-Fa-f]|[0-9A-Fa-f][^0-9A-Fa-f]|$))+/g;
const LONE_SURROGATE = /(^|[^\uD800-\uDBFF])[\uDC00-\uDFFF]|[\uD800-\uDBFF]([^\uDC00-\uDFFF]|$)/g;
const encodeUrl = (url: string) => url.replace(LONE_SURROGATE, '$1\uFFFD$2').replace(ENCODE_CHARS, encodeURI);
