import express, { type Request, type Response } from 'express';
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { PlatformDb } from './platform-db.js';

const COOKIE = 'admin_session';
const SESSION_S = 8 * 3600;

const escape = (value: unknown) => String(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The admin's layout around a page's body (what res.render makes of a view, see dashboardViews). */
export function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)} · Platform admin</title>
<style>
  :root { color-scheme: light dark; --bg: #f5f6f8; --card: #fff; --line: #d8dde5; --text: #1b2129; --muted: #5d6876; --accent: #2a5bd7; --bad: #b42323; --good: #1c7a40; font: 15px/1.5 system-ui, sans-serif; }
  @media (prefers-color-scheme: dark) { :root { --bg: #15181d; --card: #1d2128; --line: #353c48; --text: #e3e7ee; --muted: #9aa4b2; --accent: #7fa8ff; --bad: #ff8a8a; --good: #62d18e; } }
  body { margin: 0; background: var(--bg); color: var(--text); }
  header { background: var(--card); border-bottom: 1px solid var(--line); padding: 12px 24px; display: flex; gap: 16px; align-items: center; }
  header strong { flex: 1; } main { max-width: 960px; margin: 24px auto; padding: 0 16px; }
  .card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 18px 20px; margin-bottom: 18px; }
  h1 { font-size: 22px; margin: 0 0 12px; } h2 { font-size: 17px; margin: 0 0 10px; }
  label { display: grid; gap: 4px; margin-bottom: 12px; font-size: 14px; color: var(--muted); }
  input { font: inherit; padding: 7px 9px; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--text); }
  button, .btn { font: inherit; padding: 7px 16px; border-radius: 6px; border: 1px solid var(--accent); background: var(--accent); color: #fff; cursor: pointer; text-decoration: none; }
  table { width: 100%; border-collapse: collapse; } th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); }
  th { font-size: 12px; text-transform: uppercase; color: var(--muted); }
  .ok { color: var(--good); font-weight: 600; } .bad { color: var(--bad); font-weight: 600; } .muted { color: var(--muted); }
  .error { color: var(--bad); margin-bottom: 12px; } a { color: var(--accent); }
  .signin { max-width: 380px; margin: 10vh auto; }
</style></head><body>${body}</body></html>`;
}

/** GET /pub/status/<name> on this same server, by its loopback address: what the API host answers a client. */
async function checkStatus(req: Request, name: 'db' | 'web'): Promise<{ name: string; ok: boolean; detail: string }> {
  const address = req.socket.localAddress ?? '127.0.0.1';
  const host = address.includes(':') && !address.startsWith('::ffff:') ? `[${address}]` : address.replace(/^::ffff:/, '');
  try {
    const res = await fetch(`http://${host}:${req.socket.localPort}/pub/status/${name}`, { signal: AbortSignal.timeout(2000) });
    await res.arrayBuffer();
    return { name, ok: res.ok, detail: `HTTP ${res.status}` };
  } catch (err) {
    return { name, ok: false, detail: (err as Error).message };
  }
}

/** The administration interface, served on its own host name. */
export function adminRoutes(db: PlatformDb, links: { profiler?: string }, refused?: (ip: string) => Promise<void>) {
  const secret = db.signingSecret();
  // Strict, as the app is: /pub/status/db/ is not /pub/status/db.
  const router = express.Router({ strict: true });

  const seal = (value: string) => `${value}.${createHmac('sha256', secret).update(`admin:${value}`).digest('base64url')}`;
  function session(req: Request) {
    const raw = /(?:^|;\s*)admin_session=([^;]+)/.exec(req.headers.cookie ?? '')?.[1];
    if (!raw) return undefined;
    const dot = raw.lastIndexOf('.');
    const value = raw.slice(0, dot);
    const expected = Buffer.from(seal(value));
    const given = Buffer.from(raw);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    const [id, exp] = value.split(':').map(Number);
    if (!(exp * 1000 > Date.now())) return undefined;
    const account = db.account(id);
    if (account?.role !== 'admin') return undefined;
    // Who is signed in, on the request as passport leaves it: the profile names them.
    (req as Request & { user?: unknown }).user = { id: account.id, username: account.username, role: account.role };
    return account;
  }

  /** A cross-site form post carries a foreign Origin; the cookies are SameSite=Strict as well. */
  const sameOrigin = (req: Request) => {
    const origin = req.headers.origin;
    if (!origin || origin === 'null') return origin !== 'null';
    try {
      return new URL(origin).host === req.headers.host;
    } catch {
      return false;
    }
  };

  const signIn = (res: Response, status: number, error?: string, username = '') =>
    res.status(status).type('html').send(page('Sign in', `<main class="signin"><div class="card">
      <h1>Platform admin</h1>
      ${error ? `<p class="error" role="alert">${escape(error)}</p>` : ''}
      <form method="post" action="/login">
        <label>Username <input name="username" autocomplete="username" required value="${escape(username)}"></label>
        <label>Password <input name="password" type="password" autocomplete="current-password" required></label>
        <button type="submit">Sign in</button>
      </form></div></main>`));

  router.get('/', async (req, res) => {
    const account = session(req);
    if (!account) return signIn(res, 200);
    // Health as any client sees it: the public status endpoints, called over HTTP on this server.
    const [dbCheck, webCheck] = await Promise.all([checkStatus(req, 'db'), checkStatus(req, 'web')]);
    const groups = db.refusalsByAddress(Date.now() - 24 * 3600 * 1000);
    req.log.info('Dashboard viewed', { admin: account.username });
    res.render('dashboard', { title: 'Dashboard', admin: account.username, profiler: links.profiler, checks: [dbCheck, webCheck], groups });
  });

  router.post('/login', express.urlencoded({ extended: false, limit: '10kb' }), async (req, res) => {
    if (!sameOrigin(req)) return signIn(res, 403, 'This form must be sent from the admin site itself.');
    const { username, password } = (req.body ?? {}) as Record<string, unknown>;
    if (typeof username !== 'string' || typeof password !== 'string') return signIn(res, 400, 'Enter a username and a password.');
    const account = await db.verify(username, password);
    if (!account || account.role !== 'admin') {
      db.recordRefusal(req.ip ?? 'unknown', username);
      req.log.warn('Admin sign-in refused', { username, ip: req.ip });
      await refused?.(req.ip ?? 'unknown').catch((err: Error) => req.log.error('The refusal alert was not sent', { error: err.message }));
      return signIn(res, 401, 'Invalid credentials.', username);
    }
    const exp = Math.floor(Date.now() / 1000) + SESSION_S;
    res.append('Set-Cookie', `${COOKIE}=${seal(`${account.id}:${exp}`)}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${SESSION_S}`);
    res.redirect(303, '/');
  });

  router.post('/logout', (req, res) => {
    if (!sameOrigin(req)) return res.status(403).type('text').send('Forbidden');
    res.append('Set-Cookie', `${COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0`);
    res.redirect(303, '/');
  });

  return router;
}
