import express, { type ErrorRequestHandler, type Request, type Response } from 'express';
import { logger } from '../index.js';
import { sign, verify, type Claims } from './access-token.js';
import type { PlatformDb } from './platform-db.js';
import type { StatusCache } from './status-cache.js';

/** What the routes may use besides the database: a status cache, an alert on a burst of refusals. */
export interface ApiExtras {
  cache?: StatusCache;
  refused?: (ip: string) => Promise<void>;
}

const TOKEN_LIFETIME_S = 3600;

const apiError = (res: Response, code: number, message: string) => res.status(code).json({ code, message });

/** POST /api/authenticate, GET /api/me and the public status checks. */
export function apiRoutes(db: PlatformDb, extras: ApiExtras = {}) {
  const secret = db.signingSecret();
  // Strict, as the app is: /pub/status/db/ is not /pub/status/db.
  const router = express.Router({ strict: true });
  const body = [express.json({ limit: '100kb' }), express.urlencoded({ extended: false, limit: '100kb' })];

  router.post('/api/authenticate', ...body, async (req, res) => {
    const { username, password } = (req.body ?? {}) as Record<string, unknown>;
    if (typeof username !== 'string' || typeof password !== 'string' || username === '' || password === '') {
      return apiError(res, 400, 'Send "username" and "password" as strings, in JSON or form-encoded.');
    }
    const account = await db.verify(username, password);
    const ip = req.ip ?? req.socket.remoteAddress ?? 'unknown';
    if (!account) {
      db.recordRefusal(ip, username);
      req.log.warn('Authentication refused', { username, ip });
      await extras.refused?.(ip).catch((err: Error) => req.log.error('The refusal alert was not sent', { error: err.message }));
      return apiError(res, 401, 'Invalid credentials.');
    }
    const now = Math.floor(Date.now() / 1000);
    const claims: Claims = { sub: String(account.id), name: account.username, role: account.role, iat: now, exp: now + TOKEN_LIFETIME_S };
    req.log.info('Authenticated', { username: account.username, ip });
    res.json({ token: sign(claims, secret), token_type: 'Bearer', expires_in: TOKEN_LIFETIME_S, expires_at: new Date(claims.exp * 1000).toISOString() });
  });

  router.get('/api/me', (req, res) => {
    const claims = bearer(req, secret);
    if (!claims) {
      res.setHeader('WWW-Authenticate', 'Bearer realm="api"');
      return apiError(res, 401, 'A valid bearer token is required.');
    }
    res.json({ id: Number(claims.sub), username: claims.name, role: claims.role, token_expires_at: new Date(claims.exp * 1000).toISOString() });
  });

  const status = (name: 'db' | 'web', check: () => boolean) => async (_req: Request, res: Response) => {
    const cached = (await extras.cache?.healthy(name)) === true;
    const ok = cached || check();
    if (ok && !cached) await extras.cache?.remember(name);
    if (!ok) logger.error(`status check failed: ${name}`);
    res.status(ok ? 200 : 503).json({ subsystem: name, status: ok ? 'ok' : 'failing', checked_at: new Date().toISOString() });
  };
  // Express answers HEAD with the GET route, headers only: the body is never sent.
  router.get('/pub/status/db', status('db', () => db.healthy()));
  router.get('/pub/status/web', status('web', () => true));

  // A body that does not parse is the client's mistake: a JSON 4xx, never a 500 (the profile still records it).
  const badBody: ErrorRequestHandler = (err, req, res, next) => {
    const status = Number((err as { status?: unknown }).status);
    if (!req.path.startsWith('/api/') || !(status >= 400 && status < 500)) return next(err);
    apiError(res, status, (err as { type?: string }).type === 'entity.parse.failed' ? 'The request body is not valid JSON.' : (err as Error).message);
  };
  router.use(badBody);
  return router;
}

function bearer(req: Request, secret: string): Claims | undefined {
  const header = req.headers.authorization ?? '';
  const match = /^Bearer\s+(\S+)$/i.exec(header);
  const claims = match ? verify(match[1], secret) : undefined;
  // The verified claims on the request, as express-jwt leaves them: the profile names who called.
  if (claims !== undefined) (req as Request & { auth?: Claims }).auth = claims;
  return claims;
}
