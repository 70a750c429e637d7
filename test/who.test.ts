import { readFileSync } from 'node:fs';
import path from 'node:path';
import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import express from 'express';
import { listen, readRows, startFixture, tempDb, type FixtureApp, type Running } from './helpers.js';
import { assertMadeAs, matchers } from '../src/testing/index.js';
import { dump, webProfiler } from '../src/index.js';

/**
 * Who made each request, and what their session held before and after it: real apps that know
 * their users (passport-local with express-session, connect-flash, cookie-session, express-jwt,
 * express-oauth2-jwt-bearer), asked as a browser and an API client ask, their profiles read from
 * the pages, the JSON twins and the SQLite file.
 */
const ADA_PASSWORD = `ada-password-${process.pid}`;
const JWT_KEY = `jwt-key-${process.pid}-of-at-least-thirty-two-characters`;
const KEY = 'who-key';

describe.each([
  ['a CommonJS Express 4 app', 'test/fixtures/who/app4.cjs'],
  ['an ES module Express 5 app', 'test/fixtures/who/app5.mjs'],
])('%s: who made the request, and their session', (_name, fixture) => {
  let app: FixtureApp;
  let database: string;
  beforeAll(async () => {
    database = tempDb();
    app = await startFixture(path.resolve(fixture), [database], { ADA_PASSWORD, JWT_KEY });
  });
  afterAll(() => app.stop());

  /** A browser: it keeps the cookies it is given. */
  function browser() {
    const jar = new Map<string, string>();
    return async (method: string, url: string, body?: unknown, headers: Record<string, string> = {}) => {
      const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
      const res = await fetch(app.url + url, { method, headers: { ...headers, ...(cookie ? { cookie } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) });
      for (const set of res.headers.getSetCookie()) {
        const [pair] = set.split(';');
        const at = pair.indexOf('=');
        jar.set(pair.slice(0, at), pair.slice(at + 1));
      }
      await res.arrayBuffer();
      return { status: res.status, token: res.headers.get('x-debug-token')!, cookies: jar };
    };
  }
  const profile = async (token: string) => (await fetch(`${app.url}/_profiler/${token}`, { headers: { accept: 'application/json', 'x-profiler-secret': KEY } })).json();
  const page = async (token: string, panel: string) => (await fetch(`${app.url}/_profiler/${token}?panel=${panel}`, { headers: { 'x-profiler-secret': KEY } })).text();

  it('passport-local with express-session: the next request names the user and how they were known; sign-in regenerates, sign-out destroys', async () => {
    const send = browser();
    const login = await send('POST', '/site/login', { username: 'ada', password: ADA_PASSWORD });
    expect(login.status).toBe(200);
    const signedIn = await profile(login.token);
    expect(signedIn.user).toBe('ada');
    expect(signedIn.collectors.security.who).toEqual({ id: 7, username: 'ada', email: 'ada@example.test', roles: ['admin', 'editor'], via: 'password', by: 'passport local' });
    expect(signedIn.collectors.request.session).toMatchObject({ library: 'express-session', store: 'MemoryStore', events: ['regenerated', 'saved'], left: { passport: { user: 7 } } });

    const me = await send('GET', '/site/me');
    expect(me.status).toBe(200);
    const known = await profile(me.token);
    expect(known.user).toBe('ada');
    expect(known.collectors.security.who).toMatchObject({ id: 7, username: 'ada', via: 'session', by: 'passport session' });
    // Only the fields that name a user: never the password hash the app's user object carries.
    expect(JSON.stringify(known)).not.toContain('hash-not-shown');
    const security = await page(me.token, 'security');
    expect(security).toMatch(/<h3 id="who-title">Who<\/h3>[\s\S]*<strong class="who-name">ada<\/strong>[\s\S]*via session/);
    const toolbar = await (await fetch(`${app.url}/_wdt/${me.token}`, { headers: { 'x-profiler-secret': KEY } })).text();
    expect(toolbar.replace(/\s+/g, ' ')).toContain('<span class="wp-wdt-mono">ada</span> <span class="wp-wdt-muted">· session</span>');
    expect((await matchers.toBeMadeAs.call({}, known, { id: 7, via: 'session' })).pass).toBe(true);
    expect((await matchers.toBeMadeAs.call({}, known, { username: 'grace' })).pass).toBe(false);
    await assertMadeAs(known, { username: 'ada' });
    await expect(assertMadeAs(known, { id: 8 })).rejects.toThrow(/was made by \{"id":7,"username":"ada"[\s\S]*expected \{"id":8\}/);

    const logout = await send('POST', '/site/logout');
    const out = await profile(logout.token);
    // passport regenerates as it signs out; the app then destroys the session.
    expect(out.collectors.request.session.events).toEqual(expect.arrayContaining(['regenerated', 'destroyed']));
    expect(out.collectors.request.session.left).toBeNull();
    // Named by the session it came with, as the requests before it; the one passport made as it signed out beside it.
    expect(out.collectors.request.session.fingerprint).toBe(known.collectors.request.session.fingerprint);
    expect(out.collectors.request.session.renewed).toMatch(/^[0-9a-f]{8}$/);
    expect(out.collectors.request.session.renewed).not.toBe(out.collectors.request.session.fingerprint);
    expect(out.collectors.security.who).toMatchObject({ username: 'ada' });
    const tab = await page(logout.token, 'request');
    expect(tab).toMatch(/<span class="badge s-client">destroyed<\/span>/);
    expect(tab).toContain('Destroyed.');

    // The session's id is stored nowhere.
    const sid = decodeURIComponent(login.cookies.get('connect.sid') ?? '').replace(/^s:/, '').split('.')[0];
    expect(sid.length).toBeGreaterThan(20);
    const file = readFileSync(database).toString('latin1') + readFileSync(`${database}-wal`).toString('latin1');
    expect(file).not.toContain(sid);
  });

  it('a cart added to and an item removed: the session before, after and what changed; a secret in it hidden by its name', async () => {
    const send = browser();
    await send('POST', '/site/login', { username: 'ada', password: ADA_PASSWORD });
    await send('POST', '/site/cart/apple');
    await send('POST', '/site/cart/pear');
    await send('POST', '/site/coupon');
    const removed = await send('DELETE', '/site/cart/apple');
    const session = (await profile(removed.token)).collectors.request.session;
    expect(session.found).toEqual({ passport: { user: 7 }, cart: { items: ['apple', 'pear'] }, csrfSecret: '[redacted]', coupon: 'WELCOME10' });
    expect(session.left).toEqual({ passport: { user: 7 }, cart: { items: ['pear'] }, csrfSecret: '[redacted]' });
    expect(session.changes).toEqual([
      { key: 'cart', change: 'changed', before: { items: ['apple', 'pear'] }, after: { items: ['pear'] } },
      { key: 'coupon', change: 'removed', before: 'WELCOME10' },
    ]);
    expect(session.events).toEqual(['saved']);
    // A user record kept in the session: its hash and salt are never stored.
    const remembered = (await profile((await send('POST', '/site/remember')).token)).collectors.request.session.left.account;
    expect(remembered).toEqual({ username: 'ada', hash: '[redacted]', salt: '[redacted]' });
    // reload() reads the store again: the request found what it brought, not what it saved.
    const reloaded = (await profile((await send('POST', '/site/reload')).token)).collectors.request.session;
    expect(reloaded.found.seen).toBeUndefined();
    expect(reloaded.changes).toContainEqual({ key: 'seen', change: 'added', after: 1 });
    const tab = await page(removed.token, 'request');
    expect(tab).toContain('Session (2 changed)');
    expect(tab).toMatch(/<td class="key">coupon<\/td><td><span class="badge s-client">removed<\/span>/);
    const file = readFileSync(database).toString('latin1') + readFileSync(`${database}-wal`).toString('latin1');
    for (const secret of ['csrf-secret-in-the-session', 'a1b2c3d4e5f6a7b8c9d0', 'f0e1d2c3b4a59687']) expect(file).not.toContain(secret);

    // Compare: two requests' sessions side by side.
    const added = await send('POST', '/site/cart/fig');
    const compared = await (await fetch(`${app.url}/_profiler/${removed.token}/compare/${added.token}`, { headers: { 'x-profiler-secret': KEY } })).text();
    expect(compared).toContain('Session, as each request left it');
    expect(compared).toMatch(/session\.left\.cart <span class="tag warn">differs<\/span>[\s\S]*\{&quot;items&quot;:\[&quot;pear&quot;\]\}[\s\S]*\{&quot;items&quot;:\[&quot;pear&quot;,&quot;fig&quot;\]\}/);
  });

  it('connect-flash: a flash set on one request and read on the next', async () => {
    const send = browser();
    await send('POST', '/site/login', { username: 'ada', password: ADA_PASSWORD });
    const set = await send('POST', '/site/flash');
    const read = await send('GET', '/site/flashed');
    expect((await profile(set.token)).collectors.request.session.flashes).toEqual({ set: [{ type: 'info', message: 'Your order was placed.' }], read: [] });
    expect((await profile(read.token)).collectors.request.session.flashes).toEqual({ set: [], read: [{ type: 'info', message: 'Your order was placed.' }] });
    expect(await page(read.token, 'request')).toMatch(/<span class="badge s-redirect">read<\/span><\/td><td class="mono">info<\/td><td>Your order was placed\.<\/td>/);
  });

  it('cookie-session: the session the cookie brought, as it left, and destroyed', async () => {
    const send = browser();
    const first = await send('POST', '/cs/cart/pear');
    const made = (await profile(first.token)).collectors.request.session;
    expect(made).toMatchObject({ library: 'cookie-session', left: { cart: ['pear'], userId: 42 }, events: ['created', 'saved'] });
    expect(made.found).toBeUndefined();
    const again = await send('GET', '/cs/cart');
    const kept = await profile(again.token);
    expect(kept.collectors.request.session).toMatchObject({ found: { cart: ['pear'], userId: 42 }, left: { cart: ['pear'], userId: 42 }, events: [] });
    expect(kept.collectors.security.who).toEqual({ id: 42, via: 'session', by: 'cookie-session' });
    // Replaced whole: what the cookie brought is still what it found.
    const reset = await send('POST', '/cs/reset');
    expect((await profile(reset.token)).collectors.request.session).toMatchObject({ found: { cart: ['pear'], userId: 42 }, left: { cart: [] }, events: ['saved'] });
    await send('POST', '/cs/cart/pear');
    const gone = await send('POST', '/cs/logout');
    expect((await profile(gone.token)).collectors.request.session).toMatchObject({ found: { cart: ['pear'], userId: 42 }, left: null, events: ['destroyed'] });
  });

  it.each([
    ['req.auth', '/api/jwt'],
    ['express-oauth2-jwt-bearer', '/api/bearer'],
  ])('claims told by %s: the verified token\'s claims, and never the token', async (library, url) => {
    const token = jwt.sign({ sub: 'user-99', scope: 'read:notes write:notes', email: 'grace@example.test' }, JWT_KEY, { audience: 'notes', issuer: 'https://issuer.test/', expiresIn: 600 });
    const res = await fetch(app.url + url, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    const p = await profile(res.headers.get('x-debug-token')!);
    expect(p.user).toBe('grace@example.test');
    expect(p.collectors.security.who).toMatchObject({ id: 'user-99', email: 'grace@example.test', roles: ['read:notes', 'write:notes'], via: 'bearer token', by: library, claims: { sub: 'user-99', iss: 'https://issuer.test/', aud: 'notes', scope: 'read:notes write:notes' } });
    expect(await page(p.token, 'security')).toContain('Claim <span class="mono">exp</span>');
    const file = readFileSync(database).toString('latin1') + readFileSync(`${database}-wal`).toString('latin1');
    expect(file).not.toContain(token.split('.')[2]);
    expect(file).not.toContain(token.split('.')[1]);
  });

  it('a value another request hid is hidden in a session too; a name that is not a secret stays readable', async () => {
    const planted = `planted${process.pid}key0123456789abcdef`;
    await (await fetch(`${app.url}/open`, { headers: { 'X-Api-Key': planted } })).arrayBuffer();
    const send = browser();
    await send('POST', '/site/login', { username: 'ada', password: ADA_PASSWORD });
    const noted = await send('POST', '/site/note', { note: `key is ${planted}` });
    expect((await profile(noted.token)).collectors.request.session.left).toMatchObject({ note: 'key is [redacted]', tokenName: 'ci-deploy' });
    const file = readFileSync(database).toString('latin1') + readFileSync(`${database}-wal`).toString('latin1');
    expect(file).not.toContain(planted);
  });

  it('an API key is named by its header, never its value; a request from no one says nothing', async () => {
    const keyed = await fetch(`${app.url}/open`, { headers: { 'X-Api-Key': 'live-key-0123456789abcdefghij' } });
    const p = await profile(keyed.headers.get('x-debug-token')!);
    expect(p.collectors.security.who).toEqual({ via: 'API key', key: 'x-api-key', anonymous: true });
    expect(JSON.stringify(p)).not.toContain('live-key-0123456789abcdefghij');
    const nobody = await fetch(`${app.url}/open`);
    const q = await profile(nobody.headers.get('x-debug-token')!);
    expect(q.user).toBeNull();
    expect(q.collectors.security).toBeUndefined();
    expect(q.collectors.request.session).toBeUndefined();
    // express-session makes a session for a visitor who brought none; unsaved (saveUninitialized: false), it is no one's.
    const stranger = await fetch(`${app.url}/site/me`);
    expect(stranger.status).toBe(401);
    expect((await profile(stranger.headers.get('x-debug-token')!)).collectors.request.session).toBeUndefined();
  });

  it('search by user finds exactly that user\'s requests: the list\'s column, the search page and MCP\'s filter', async () => {
    const ada = browser();
    await ada('POST', '/site/login', { username: 'ada', password: ADA_PASSWORD });
    const hers = [(await ada('GET', '/site/me')).token, (await ada('POST', '/site/cart/kiwi')).token];
    const token = jwt.sign({ sub: 'user-5', email: 'ben@example.test' }, JWT_KEY, { audience: 'notes', issuer: 'https://issuer.test/' });
    const his = (await fetch(`${app.url}/api/jwt`, { headers: { authorization: `Bearer ${token}` } })).headers.get('x-debug-token')!;
    const search = async (user: string) => ((await (await fetch(`${app.url}/_profiler/search?user=${encodeURIComponent(user)}&limit=100`, { headers: { accept: 'application/json', 'x-profiler-secret': KEY } })).json()) as { profiles: { token: string; user: string }[] }).profiles;
    const found = await search('ada');
    expect(found.length).toBeGreaterThanOrEqual(2);
    expect(found.every((r) => r.user === 'ada')).toBe(true);
    expect(found.map((r) => r.token)).toEqual(expect.arrayContaining(hers));
    expect(found.map((r) => r.token)).not.toContain(his);
    expect((await search('ben@example.test')).map((r) => r.token)).toEqual([his]);
    // Stored as the list names them: the row's user column.
    expect(readRows(database).filter((r) => hers.includes(r.token)).map((r) => (r as { user?: string }).user)).toEqual(['ada', 'ada']);
    const list = await (await fetch(`${app.url}/_profiler/search?user=ada`, { headers: { 'x-profiler-secret': KEY } })).text();
    expect(list).toContain('<td class="user"><a href="/_profiler/search?user=ada" title="Only the requests this user made">ada</a></td>');
    expect(list).not.toContain(his);
  });
});

/** What bson's ObjectId offers of itself: its hex by a method of its class. */
class ObjectIdLike {
  constructor(private readonly hex: string) {}
  toHexString() {
    return this.hex;
  }
}

describe('in the app\'s own process', () => {
  let server: Running;
  let database: string;
  let profiler: ReturnType<typeof webProfiler>;
  const read = { getters: 0, traps: 0 };
  beforeAll(async () => {
    database = tempDb();
    profiler = webProfiler({
      database,
      onError: () => {},
      // An app with a scheme of its own: a signed header names the tenant's user.
      identify: (req) => (req.get('x-tenant-user') ? { id: Number(req.get('x-tenant-user')), name: 'Tenant user', roles: ['viewer'], via: 'API key', key: 'X-Tenant-Key' } : undefined),
    });
    const app = express();
    app.use(profiler);
    app.get('/tenant', (req, res) => res.json({ ok: true }));
    // A user object as ORMs make them: a getter, a Proxy, and fields that must stay out.
    app.get('/orm', (req, res) => {
      const user = { id: 11, username: 'orm-user', passwordHash: '$2b$10$abcdefghijklmnopqrstuuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZab', apiToken: 'tok-orm-user-0123456789' };
      Object.defineProperty(user, 'email', { enumerable: true, get: () => ((read.getters += 1), 'orm@example.test') });
      (req as { user?: unknown }).user = user;
      (req as { auth?: unknown }).auth = new Proxy({ sub: 'proxied' }, { get: (t, k) => ((read.traps += 1), Reflect.get(t, k)), getOwnPropertyDescriptor: (t, k) => ((read.traps += 1), Reflect.getOwnPropertyDescriptor(t, k)) });
      res.json({ ok: true });
    });
    // A Mongoose document: its fields are under _doc; roles an app made a Proxy that throws.
    app.get('/document', (req, res) => {
      const roles = new Proxy(['reader'], { get: () => { throw new Error('roles are not to be read'); } });
      (req as { user?: unknown }).user = { _doc: { _id: new ObjectIdLike('65a1b2c3d4e5f6a7b8c9d0e1'), username: 'mongo-user', hash: 'deadbeef'.repeat(8) }, roles };
      res.json({ ok: true });
    });
    app.get('/dumped', (req, res) => {
      // Lucia's validateSession() gives { user, session }: the session's id is its token.
      const session = { id: 'lucia-session-token-0123456789', cart: { items: ['tea'] }, csrfSecret: 'csrf-secret-dumped-0123', userId: 5 };
      dump({ session });
      req.log.info('session read', { session });
      res.json({ ok: true });
    });
    server = await listen(app);
  });
  afterAll(async () => {
    await server?.close();
    profiler?.close();
  });

  const storedOf = async (res: Response) => {
    const token = res.headers.get('x-debug-token')!;
    await res.arrayBuffer();
    profiler.flush();
    return readRows(database).find((r) => r.token === token)! as ReturnType<typeof readRows>[number] & { user?: string };
  };

  it('identify() names who made a request for an app with a scheme of its own', async () => {
    const row = await storedOf(await fetch(`${server.url}/tenant`, { headers: { 'x-tenant-user': '31' } }));
    expect(row.user).toBe('Tenant user');
    expect(row.collectors.security.who).toEqual({ id: 31, name: 'Tenant user', roles: ['viewer'], via: 'API key', by: 'identify()', key: 'X-Tenant-Key' });
    const nobody = await storedOf(await fetch(`${server.url}/tenant`));
    expect(nobody.user).toBeNull();
  });

  it('reads a user object\'s own data fields that name a user, and runs none of its getters or traps', async () => {
    const row = await storedOf(await fetch(`${server.url}/orm`));
    expect(row.collectors.security.who).toEqual({ id: 11, username: 'orm-user', via: 'unknown' });
    expect(read).toEqual({ getters: 0, traps: 0 });
    const text = JSON.stringify(row);
    for (const kept of ['abcdefghijklmnopqrstuuvwxyz', 'tok-orm-user', 'orm@example.test', 'proxied']) expect(text).not.toContain(kept);
  });

  it('a `session` object is a container: a dump and a log line\'s context show its attributes, each redacted by its own name', async () => {
    const row = await storedOf(await fetch(`${server.url}/dumped`));
    const line = row.collectors.logs.lines.find((l: { message: string }) => l.message === 'session read');
    expect(line.context).toEqual({ session: { id: '[redacted]', cart: { items: ['tea'] }, csrfSecret: '[redacted]', userId: 5 } });
    const dumped = JSON.stringify(row.collectors.dumps.dumps[0].value);
    expect(dumped).toContain('"tea"');
    expect(dumped).not.toContain('csrf-secret-dumped');
    expect(JSON.stringify(row)).not.toContain('csrf-secret-dumped');
    expect(JSON.stringify(row)).not.toContain('lucia-session-token');
  });

  it('a Mongoose document is named by its data; a Proxy of the app\'s is left unread, and costs nothing else of the profile', async () => {
    const res = await fetch(`${server.url}/document`);
    expect(res.status).toBe(200);
    const row = await storedOf(res);
    expect(row.collectors.security.who).toEqual({ id: '65a1b2c3d4e5f6a7b8c9d0e1', username: 'mongo-user', via: 'unknown' });
    expect(JSON.stringify(row)).not.toContain('deadbeef');
  });
});

describe.skipIf(!inject('pgUrl'))('on the PostgreSQL store', () => {
  it('search by user finds exactly that user\'s requests, and the list names them', async () => {
    const profiler = webProfiler({ database: inject('pgUrl')!, schema: `who_${process.pid}`, secret: KEY, onError: () => {} });
    const app = express();
    app.use(profiler);
    app.get('/as/:name', (req, res) => {
      (req as { user?: unknown }).user = { id: req.params.name.length, username: req.params.name };
      res.json({ ok: true });
    });
    const server = await listen(app);
    try {
      const tokens: Record<string, string[]> = { ada: [], ben: [] };
      for (const name of ['ada', 'ben', 'ada', 'ben', 'ada']) tokens[name].push((await fetch(`${server.url}/as/${name}`)).headers.get('x-debug-token')!);
      const found = await (await fetch(`${server.url}/_profiler/search?user=ada&limit=100`, { headers: { accept: 'application/json', 'x-profiler-secret': KEY } })).json();
      expect(found.profiles.map((p: { token: string }) => p.token)).toEqual([...tokens.ada].reverse());
      expect(found.profiles.every((p: { user: string }) => p.user === 'ada')).toBe(true);
      const list = await (await fetch(`${server.url}/_profiler/`, { headers: { 'x-profiler-secret': KEY } })).text();
      expect(list).toContain('title="Only the requests this user made">ben</a>');
    } finally {
      await server.close();
      await profiler.close();
    }
  });
});
