import { request as httpRequest } from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDemoApp } from '../src/demo/app.js';
import { configFrom, type AppEnv } from '../src/demo/config.js';
import { listen, tempDir } from './helpers.js';

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

const SEED = { username: 'ada', password: 'correct horse battery staple' };

/** node:http rather than fetch: the admin host is told apart by a Host header fetch will not set. */
function call(base: string, method: string, path: string, options: { host?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Reply> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers: { ...(options.host ? { host: `${options.host}:${url.port}` } : {}), ...options.headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

async function startDemo(env: AppEnv, extra: Record<string, string> = {}) {
  const dir = tempDir();
  const config = configFrom({ APP_ENV: env, STORAGE_DIR: path.join(dir, 'storage'), ...extra });
  const demo = await createDemoApp(config, { seed: SEED });
  const server = await listen(demo.app);
  return { ...demo, ...server, config, stop: async () => { await server.close(); demo.close(); } };
}

const json = { 'content-type': 'application/json', accept: 'application/json' };

describe.each(['dev', 'staging', 'prod'] as const)('the observed surface in %s', (env) => {
  let demo: Awaited<ReturnType<typeof startDemo>>;
  beforeAll(async () => {
    demo = await startDemo(env, { WEB_PROFILER_SECRET: 'staging-secret' });
  });
  afterAll(() => demo.stop());

  const debugHeaders = (reply: Reply) => {
    if (env === 'prod') {
      expect(reply.headers['x-debug-token']).toBeUndefined();
      expect(reply.headers['x-robots-tag']).toBeUndefined();
    } else {
      expect(reply.headers['x-debug-token']).toMatch(/^[0-9a-f]{6}$/);
      expect(reply.headers['x-robots-tag']).toBe(env === 'dev' ? 'noindex' : undefined);
    }
  };

  it('POST /api/authenticate refuses bad credentials with 401 and a JSON error', async () => {
    for (let i = 0; i < 3; i++) {
      const reply = await call(demo.url, 'POST', '/api/authenticate', { headers: json, body: JSON.stringify({ username: 'ada', password: 'wrong' }) });
      expect(reply.status).toBe(401);
      expect(JSON.parse(reply.body)).toEqual({ code: 401, message: 'Invalid credentials.' });
      debugHeaders(reply);
    }
    expect(demo.db.refusalsByAddress(0)).toEqual([expect.objectContaining({ ip: '127.0.0.1', attempts: 3, usernames: 'ada' })]);
  });

  it('POST /api/authenticate accepts good credentials (JSON or form) and the token opens /api/me', async () => {
    const viaJson = await call(demo.url, 'POST', '/api/authenticate', { headers: json, body: JSON.stringify(SEED) });
    expect(viaJson.status).toBe(200);
    const issued = JSON.parse(viaJson.body);
    expect(issued).toMatchObject({ token_type: 'Bearer', expires_in: 3600, token: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/) });
    const viaForm = await call(demo.url, 'POST', '/api/authenticate', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(SEED).toString(),
    });
    expect(viaForm.status).toBe(200);
    const me = await call(demo.url, 'GET', '/api/me', { headers: { authorization: `Bearer ${issued.token}` } });
    expect(me.status).toBe(200);
    expect(JSON.parse(me.body)).toMatchObject({ username: 'ada', role: 'admin' });
    const anonymous = await call(demo.url, 'GET', '/api/me');
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers['www-authenticate']).toBe('Bearer realm="api"');
    // Each forgery differs from the issued token: a byte of the signature, or only the spare bits of its last character.
    const signature = issued.token.lastIndexOf('.') + 1;
    const flip = (at: number, from: string, to: string) => issued.token.slice(0, at) + (issued.token[at] === from ? to : from) + issued.token.slice(at + 1);
    for (const forged of [flip(signature, 'A', 'B'), flip(issued.token.length - 1, 'A', 'B')]) {
      expect(forged).not.toBe(issued.token);
      expect((await call(demo.url, 'GET', '/api/me', { headers: { authorization: `Bearer ${forged}` } })).status, forged).toBe(401);
    }
  });

  it('a malformed body answers 400 with a JSON error, never 500', async () => {
    for (const body of ['{"username":', '[1,2', '{"username": 5, "password": true}', '']) {
      const reply = await call(demo.url, 'POST', '/api/authenticate', { headers: json, body });
      expect(reply.status, body).toBe(400);
      expect(JSON.parse(reply.body).code).toBe(400);
    }
  });

  it('HEAD /pub/status/db and /pub/status/web answer 200 without credentials and without a body', async () => {
    for (const subsystem of ['db', 'web']) {
      const head = await call(demo.url, 'HEAD', `/pub/status/${subsystem}`);
      expect(head.status).toBe(200);
      expect(head.body).toBe('');
      debugHeaders(head);
      const get = await call(demo.url, 'GET', `/pub/status/${subsystem}`);
      expect(JSON.parse(get.body)).toMatchObject({ subsystem, status: 'ok' });
    }
  });

  it('GET / on the admin host answers 200 with the admin entry', async () => {
    const reply = await call(demo.url, 'GET', '/', { host: 'admin.localhost' });
    expect(reply.status).toBe(200);
    expect(reply.body).toContain('Platform admin');
    expect(reply.body).toContain('action="/login"');
    const apiRoot = await call(demo.url, 'GET', '/', { headers: { accept: 'text/plain' } });
    expect(apiRoot.status).toBe(404);
  });

  it('GET /robots.txt answers 404: the debug page in dev, the status alone elsewhere', async () => {
    const reply = await call(demo.url, 'GET', '/robots.txt', { headers: { accept: 'text/html' } });
    expect(reply.status).toBe(404);
    debugHeaders(reply);
    const message = `No route found for &quot;GET ${demo.url}/robots.txt&quot;`;
    if (env === 'dev') expect(reply.body).toContain(message);
    else {
      expect(reply.body).not.toContain('No route found');
      expect(reply.body).toContain('404 Not Found');
    }
  });

  it('GET /_profiler: 301 where the profiler runs, a plain 404 in prod', async () => {
    const reply = await call(demo.url, 'GET', '/_profiler');
    if (env === 'prod') {
      expect(reply.status).toBe(404);
      expect(reply.body).not.toContain('No route found');
      return;
    }
    expect(reply.status).toBe(301);
    expect(reply.headers.location).toBe('/_profiler/');
  });

  it('/_profiler/<token>?panel=exception&type=request shows why a failed call failed', async () => {
    const failed = await call(demo.url, 'POST', '/api/authenticate', { headers: json, body: '{"username":' });
    if (env === 'prod') {
      expect((await call(demo.url, 'GET', '/_profiler/abcdef?panel=exception&type=request')).status).toBe(404);
      return;
    }
    const token = failed.headers['x-debug-token'] as string;
    demo.profiler.flush();
    const reply = await call(demo.url, 'GET', `/_profiler/${token}?panel=exception&type=request`, { headers: { 'x-profiler-secret': 'staging-secret' } });
    expect(reply.status).toBe(200);
    expect(reply.body).toContain('SyntaxError');
    expect(reply.body).toMatch(/Unexpected end of JSON input|JSON/);
  });

  if (env === 'staging') {
    it('keeps the profiler behind its check: other hosts and clients need the secret', async () => {
      const rebinding = await call(demo.url, 'GET', '/_profiler/', { host: 'attacker.example' });
      expect(rebinding.status).toBe(403);
      const withSecret = await call(demo.url, 'GET', '/_profiler/', { host: 'attacker.example', headers: { 'x-profiler-secret': 'staging-secret' } });
      expect(withSecret.status).toBe(200);
      const wrong = await call(demo.url, 'GET', '/_profiler/', { host: 'attacker.example', headers: { 'x-profiler-secret': 'guess' } });
      expect(wrong.status).toBe(403);
    });
  }
});

describe('the admin interface', () => {
  let demo: Awaited<ReturnType<typeof startDemo>>;
  beforeAll(async () => {
    demo = await startDemo('dev');
  });
  afterAll(() => demo.stop());

  it('signs an admin in and shows health and refused authentications by client address', async () => {
    await call(demo.url, 'POST', '/api/authenticate', { headers: json, body: JSON.stringify({ username: 'mallory', password: 'x' }) });
    const bad = await call(demo.url, 'POST', '/login', { host: 'admin.localhost', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'username=ada&password=nope' });
    expect(bad.status).toBe(401);
    expect(bad.body).toContain('Invalid credentials.');
    const cross = await call(demo.url, 'POST', '/login', { host: 'admin.localhost', headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'http://evil.example' }, body: new URLSearchParams(SEED).toString() });
    expect(cross.status).toBe(403);
    const ok = await call(demo.url, 'POST', '/login', { host: 'admin.localhost', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(SEED).toString() });
    expect(ok.status).toBe(303);
    const cookie = String(ok.headers['set-cookie']).split(';')[0];
    const dashboard = await call(demo.url, 'GET', '/', { host: 'admin.localhost', headers: { cookie } });
    expect(dashboard.body).toContain('Subsystem health');
    expect(dashboard.body).toMatch(/<code>127\.0\.0\.1<\/code><\/td><td>2<\/td><td>mallory,ada<\/td>/);
    expect(dashboard.body).toContain('/_profiler/search?ip=127.0.0.1&amp;method=POST');
    expect(dashboard.body).toContain('<tr><td>db</td><td class="ok">healthy</td><td><code>GET /pub/status/db</code></td></tr>');
    const tampered = await call(demo.url, 'GET', '/', { host: 'admin.localhost', headers: { cookie: cookie.replace(/.$/, (c) => (c === 'a' ? 'b' : 'a')) } });
    expect(tampered.body).toContain('action="/login"');

    // Its profile shows its queries and the two status calls, each linked to the status check's own profile.
    demo.profiler.flush();
    const profile = (panel: string, token: string) => call(demo.url, 'GET', `/_profiler/${token}?panel=${panel}`, { headers: { accept: 'application/json' } }).then((r) => JSON.parse(r.body).data);
    const token = dashboard.headers['x-debug-token'] as string;
    const calls = await profile('http_client', token);
    expect(calls.requests.map((c: any) => [c.method, new URL(c.url).pathname, c.status])).toEqual([['GET', '/pub/status/db', 200], ['GET', '/pub/status/web', 200]]);
    const db = await profile('db', token);
    expect(db.queries.map((q: any) => q.sql)).toEqual(expect.arrayContaining([expect.stringContaining('FROM accounts WHERE id = ?'), expect.stringContaining('FROM refused_authentications')]));
    const health = await profile('db', calls.requests[0].token);
    expect(health.queries.map((q: any) => q.sql)).toEqual(['SELECT count(*) AS n FROM accounts']);
    const child = JSON.parse((await call(demo.url, 'GET', `/_profiler/${calls.requests[0].token}`, { headers: { accept: 'application/json' } })).body);
    expect(child.parent).toBe(token);
    const signIn = await profile('db', ok.headers['x-debug-token'] as string);
    expect(signIn.queries[0]).toMatchObject({ sql: 'SELECT id, username, role, password_hash FROM accounts WHERE username = ?', params: 'ada', rows: 1 });
    // Who made each: the admin by the demo's own session cookie, an API client by its token's claims.
    expect((await profile('security', token)).who).toEqual({ id: 1, username: 'ada', roles: ['admin'], via: 'cookie' });
    const issued = JSON.parse((await call(demo.url, 'POST', '/api/authenticate', { headers: json, body: JSON.stringify(SEED) })).body);
    const me = await call(demo.url, 'GET', '/api/me', { headers: { authorization: `Bearer ${issued.token}` } });
    demo.profiler.flush();
    expect((await profile('security', me.headers['x-debug-token'] as string)).who).toMatchObject({ id: '1', name: 'ada', roles: ['admin'], via: 'bearer token', by: 'req.auth' });
  });

  it('mails the admins on three refused sign-ins within a minute, renders its dashboard as a view, caches its status checks in Redis', async () => {
    const redisUrl = inject('redisUrl');
    const other = await startDemo('dev', redisUrl ? { REDIS_URL: redisUrl } : {});
    const profile = (panel: string, token: unknown) => call(other.url, 'GET', `/_profiler/${token}?panel=${panel}`, { headers: { accept: 'application/json' } }).then((r) => JSON.parse(r.body).data);
    try {
      const refusals = [];
      for (const password of ['a', 'b', 'c']) refusals.push(await call(other.url, 'POST', '/api/authenticate', { headers: json, body: JSON.stringify({ username: 'mallory', password }) }));
      expect(refusals.map((r) => r.status)).toEqual([401, 401, 401]);
      expect(await profile('mail', refusals[1].headers['x-debug-token'])).toBeNull();
      const mail = await profile('mail', refusals[2].headers['x-debug-token']);
      expect(mail.messages).toEqual([expect.objectContaining({ subject: '3 refused sign-ins from 127.0.0.1 within a minute', to: ['"ada" <ada@localhost>'], transport: 'web-profiler' })]);
      // Before the dashboard, which checks them too.
      if (redisUrl) {
        const first = await call(other.url, 'GET', '/pub/status/web');
        const second = await call(other.url, 'GET', '/pub/status/web');
        expect((await profile('cache', second.headers['x-debug-token'])).commands).toEqual([expect.objectContaining({ command: 'get', keys: ['status:web'], hit: true, caller: expect.stringMatching(/status-cache\.ts:\d+$/) })]);
        expect((await profile('cache', first.headers['x-debug-token'])).commands.map((c: any) => c.command)).toEqual(expect.arrayContaining(['get', 'set']));
      }
      const ok = await call(other.url, 'POST', '/login', { host: 'admin.localhost', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(SEED).toString() });
      const dashboard = await call(other.url, 'GET', '/', { host: 'admin.localhost', headers: { cookie: String(ok.headers['set-cookie']).split(';')[0] } });
      const views = await profile('views', dashboard.headers['x-debug-token']);
      expect(views.renders).toEqual([expect.objectContaining({ name: 'dashboard', engine: 'eta', locals: ['title', 'admin', 'profiler', 'checks', 'groups'] })]);
    } finally {
      await other.stop();
    }
  });

  it('HEAD /pub/status/db answers 503 when the database is gone, while web stays 200', async () => {
    const other = await startDemo('dev');
    try {
      other.db.close();
      const db = await call(other.url, 'HEAD', '/pub/status/db');
      expect(db.status).toBe(503);
      expect(db.body).toBe('');
      expect((await call(other.url, 'HEAD', '/pub/status/web')).status).toBe(200);
      expect(JSON.parse((await call(other.url, 'GET', '/pub/status/db')).body)).toMatchObject({ subsystem: 'db', status: 'failing' });
    } finally {
      await other.stop();
    }
  });

  it('a refused authentication is logged with the client address in its profile', async () => {
    const reply = await call(demo.url, 'POST', '/api/authenticate', { headers: json, body: JSON.stringify({ username: 'eve', password: 'secret-guess' }) });
    const token = reply.headers['x-debug-token'] as string;
    demo.profiler.flush();
    const logs = JSON.parse((await call(demo.url, 'GET', `/_profiler/${token}?panel=logs`, { headers: { accept: 'application/json' } })).body);
    expect(logs.data.lines).toEqual([expect.objectContaining({ level: 'warn', message: 'Authentication refused', context: { username: 'eve', ip: '127.0.0.1' } })]);
    const request = JSON.parse((await call(demo.url, 'GET', `/_profiler/${token}?panel=request`, { headers: { accept: 'application/json' } })).body);
    expect(request.data.body.json).toEqual({ username: 'eve', password: '[redacted]' });
    // The host routers are layers of the app: the routing panel lists their routes.
    const routing = (await call(demo.url, 'GET', `/_profiler/${token}?panel=routing`)).body;
    expect(routing).toMatch(/<td class="mono">\/api\/authenticate<\/td><td class="mono">POST<\/td><td class="lvl-info">Matches: this route answered/);
    expect(routing).toContain('<td class="mono">/login</td>');
  });

  it('the profile a refused authentication links to opens on why: the message it answered, the line that sent it, its warning', async () => {
    const reply = await call(demo.url, 'POST', '/api/authenticate', { headers: json, body: JSON.stringify({ username: 'eve', password: 'secret-guess' }) });
    demo.profiler.flush();
    const page = (await call(demo.url, 'GET', new URL(reply.headers['x-debug-token-link'] as string).pathname)).body;
    const failure = /<section class="card failure"[\s\S]*?<\/section>/.exec(page)?.[0] ?? '';
    expect(failure).toContain('<span class="badge s-client">401</span> Unauthorized');
    expect(failure).toContain('<p class="failure-message">Invalid credentials.</p>');
    expect(failure).toMatch(/Sent from <span class="mono">[^<]*src\/demo\/api\.ts:\d+<\/span>, called from <span class="mono">[^<]*src\/demo\/api\.ts:\d+<\/span>/);
    expect(failure).toMatch(/<span class="level lvl-warn">warn<\/span> <span class="msg">Authentication refused<\/span>/);
    expect(failure).toContain(`href="/_profiler/${reply.headers['x-debug-token']}?panel=logs#log-table-1"`);
    // The logs' badge says there is a warning.
    expect(page).toMatch(/<span>Logs<\/span><span class="badge s-client" title="1">1<\/span>/);
    // A request that succeeded shows none.
    const ok = await call(demo.url, 'POST', '/api/authenticate', { headers: json, body: JSON.stringify(SEED) });
    demo.profiler.flush();
    expect((await call(demo.url, 'GET', new URL(ok.headers['x-debug-token-link'] as string).pathname)).body).not.toContain('class="card failure"');
  });
});
