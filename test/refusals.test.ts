import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import nodeModule from 'node:module';
import { readRows, startFixture, tempDb, type FixtureApp } from './helpers.js';

/** Whether this Node has module.registerHooks, which express-web-profiler/hooks needs (22.15 and later). */
const HOOKS = typeof (nodeModule as { registerHooks?: unknown }).registerHooks === 'function';

/**
 * Requests refused by the libraries Express apps use, most of them without throwing: each
 * profile names the library, gives its reason as the library worded it and the app's line that
 * mounted or called it, on the security panel and first on the page a profile link opens.
 */
const ADA_PASSWORD = `ada-password-${process.pid}`;
const JWT_KEY = `jwt-key-${process.pid}`;
const KEY = 'refusals-key';

describe.each([
  ['a CommonJS Express 4 app', 'test/fixtures/refusals/app4.cjs'],
  ['an ES module Express 5 app', 'test/fixtures/refusals/app5.mjs'],
])('%s: who said no, and why', (_name, fixture) => {
  const file = path.resolve(fixture);
  const line = (text: string) => `${file}:${readFileSync(file, 'utf8').split('\n').findIndex((l) => l.includes(text)) + 1}`;
  let app: FixtureApp;
  let database: string;
  beforeAll(async () => {
    database = tempDb();
    // As the docs say to start an app whose validations are to be recorded (see docs/security.md).
    app = await startFixture(file, [database], { ADA_PASSWORD, JWT_KEY }, ['--import', path.resolve('dist/hooks.js')]);
  });
  afterAll(() => app.stop());

  const profiler = { accept: 'application/json', 'x-profiler-secret': KEY };
  async function send(method: string, url: string, headers: Record<string, string> = {}, body?: unknown) {
    const res = await fetch(app.url + url, { method, headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
    const token = res.headers.get('x-debug-token')!;
    // The page asks the writer for what is not stored yet: no wait needed here.
    const profile = await (await fetch(`${app.url}/_profiler/${token}`, { headers: profiler })).json();
    const page = (panel?: string) => fetch(`${app.url}/_profiler/${token}${panel ? `?panel=${panel}` : ''}`, { headers: { 'x-profiler-secret': KEY } }).then((r) => r.text());
    return { status: res.status, headers: res.headers, checks: (profile.collectors.security?.checks ?? []) as Record<string, any>[], page };
  }

  it('passport: the strategy, its message, the line that mounted it; the user it let in', async () => {
    const refused = await send('POST', '/login', {}, { username: 'ada', password: 'wrong-password-1' });
    expect(refused.status).toBe(401);
    expect(refused.checks).toEqual([expect.objectContaining({ library: 'passport', verdict: 'refused', reason: 'Incorrect password.', fields: { strategy: 'local' }, at: line("passport.authenticate('local'") })]);
    const page = await refused.page();
    // First on the page a profile link opens: who said no, and why.
    expect(page).toMatch(/Refused by passport<\/strong> <span class="mono">\(local\)<\/span><\/a>: <span class="failure-reason">Incorrect password\.<\/span>/);

    const missing = await send('POST', '/login', {}, { username: 'ada' });
    expect(missing.status).toBe(400);
    expect(missing.checks[0]).toMatchObject({ library: 'passport', verdict: 'refused', reason: 'Missing credentials', fields: { strategy: 'local', status: 400 } });

    const admitted = await send('POST', '/login', {}, { username: 'ada', password: ADA_PASSWORD });
    expect(admitted.status).toBe(200);
    expect(admitted.checks).toEqual([expect.objectContaining({ library: 'passport', verdict: 'passed', reason: 'authenticated', fields: { strategy: 'local', user: { id: 7, username: 'ada' } } })]);
  });

  it('passport\'s session: the user it restored and the session it used; a visitor with none is passed on, not refused', async () => {
    const signedIn = await send('POST', '/account/login', {}, { username: 'ada', password: ADA_PASSWORD });
    expect(signedIn.status).toBe(200);
    const cookie = signedIn.headers.get('set-cookie')!.split(';')[0];
    const sessionId = decodeURIComponent(cookie.split('=')[1]).replace(/^s:/, '').split('.')[0];

    const known = await send('GET', '/account/me', { cookie });
    expect(known.status).toBe(200);
    expect(known.checks).toEqual([expect.objectContaining({ library: 'passport', verdict: 'passed', reason: 'user restored from the session', fields: { strategy: 'session', user: { id: 7, username: 'ada' }, fingerprint: createHash('sha256').update(sessionId).digest('hex').slice(0, 8) } })]);
    const panel = await known.page('security');
    expect(panel).toContain('user restored from the session');
    expect(panel).not.toContain(sessionId);

    const stranger = await send('GET', '/account/me');
    expect(stranger.status).toBe(401);
    expect(stranger.checks).toEqual([expect.objectContaining({ library: 'passport', verdict: 'passed', reason: 'passed on (no one signed in)', fields: { strategy: 'session' } })]);
    // The app refused, not passport: the page does not blame it.
    expect(await stranger.page()).not.toContain('Refused by passport');
    expect(JSON.stringify(readRows(database))).not.toContain(sessionId);
  });

  it('jsonwebtoken and jose: the failed verification, why, the expiry and the audience wanted, the line that called verify', async () => {
    const expired = jwt.sign({ sub: 'ada', aud: 'notes', exp: 1_700_000_060 }, JWT_KEY);
    const res = await send('GET', '/me', { authorization: `Bearer ${expired}` });
    expect(res.status).toBe(401);
    expect(res.checks).toEqual([expect.objectContaining({ library: 'jsonwebtoken', verdict: 'refused', reason: 'jwt expired', fields: { error: 'TokenExpiredError', expiredAt: '2023-11-14T22:14:20.000Z', audience: 'notes' }, at: line('jwt.verify(') })]);
    const forged = await send('GET', '/me', { authorization: `Bearer ${jwt.sign({ sub: 'ada', aud: 'notes' }, 'another-key')}` });
    expect(forged.checks[0]).toMatchObject({ library: 'jsonwebtoken', reason: 'invalid signature' });
    // jose (ES modules only): its verdict as the error the app passed on.
    const josed = await send('GET', '/jose', { authorization: `Bearer ${expired}` });
    expect(josed.status).toBe(401);
    expect(josed.checks[0]).toMatchObject({ library: 'jose', verdict: 'refused', reason: '"exp" claim timestamp check failed', fields: { code: 'ERR_JWT_EXPIRED', claim: 'exp', reason: 'check_failed' } });
    // The app's line in the error's stack (the await of jwtVerify), or where the route was mounted.
    expect([line('await jwtVerify('), line("app.get('/jose'")]).toContain(josed.checks[0].at);
    const panel = await res.page('security');
    expect(panel).toContain('<strong>jsonwebtoken</strong>');
    expect(panel).toContain('<p class="check-reason">jwt expired</p>');
    expect(panel).toContain('2023-11-14T22:14:20.000Z');
  });

  it('express-rate-limit: the limit, what was used and left, the key it counted by, the line that mounted it', async () => {
    expect((await send('GET', '/limited')).status).toBe(200);
    const res = await send('GET', '/limited');
    expect(res.status).toBe(429);
    expect(res.checks).toEqual([expect.objectContaining({ library: 'express-rate-limit', verdict: 'refused', reason: '2 counted against a limit of 1', fields: expect.objectContaining({ limit: 1, used: 2, remaining: 0, key: '127.0.0.1' }), at: line("app.use('/limited'") })]);
    expect(await res.page()).toContain('Refused by express-rate-limit');
  });

  it('express-validator: each failing field, its message, its value (a password\'s hidden)', async () => {
    const res = await send('POST', '/signup', {}, { email: 'not-an-email', password: 'short-pw' });
    expect(res.status).toBe(422);
    expect(res.checks[0]).toMatchObject({
      library: 'express-validator',
      reason: 'email: must be an email address; password: must be at least 12 characters',
      fields: { errors: [{ field: 'email', location: 'body', message: 'must be an email address', value: 'not-an-email' }, { field: 'password', message: 'must be at least 12 characters', value: '[redacted]' }] },
    });
    const panel = await res.page('security');
    expect(panel).toContain('<td class="mono">email <span class="muted">(body)</span></td><td>must be an email address</td><td class="mono">not-an-email</td>');
    expect(panel).not.toContain('short-pw');
  });

  it('zod and joi: each issue as the library gave it; the line that ran the validation', async () => {
    const zod = await send('POST', '/notes', {}, { title: 'a', tags: 'x' });
    expect(zod.status).toBe(400);
    // Recorded where it ran where this Node lets the hooks follow zod; else read from the answer, at the line that sent it.
    expect(zod.checks[0]).toMatchObject({ library: 'zod', fields: { errors: [expect.objectContaining({ field: 'title', code: 'too_small' }), expect.objectContaining({ field: 'tags', code: 'invalid_type' })] }, at: line(HOOKS ? 'Note.safeParse(' : 'return res.status(400).json({ issues') });
    expect(zod.checks[0].reason).toMatch(/^title: Too small: expected string to have >=3 characters; tags: /);
    const joi = await send('PUT', '/profile', {}, { name: 'a' });
    expect(joi.status).toBe(400);
    // celebrate's error names the part of the request: it stands for the joi validation it ran.
    expect(joi.checks).toEqual([expect.objectContaining({ library: fixture.endsWith('.mjs') ? 'celebrate' : 'joi', reason: 'name: "name" length must be at least 3 characters long', fields: expect.objectContaining({ errors: [expect.objectContaining({ field: 'name', [fixture.endsWith('.mjs') ? 'type' : 'code']: 'string.min' })] }) })]);
  });

  it('validations the app answers with a generic 400 of its own: the library, each issue, the line that called it, first on the page; a passing one adds nothing', async () => {
    const cases: [string, string, Record<string, unknown>[]][] = [
      ['zod', 'Signup.safeParse(', [{ field: 'email', message: 'Invalid email address', code: 'invalid_format' }, { field: 'age', code: 'invalid_type' }]],
      ['joi', 'JoiSignup.validate(', [{ field: 'email', code: 'string.email', value: 'nope' }, { field: 'password', code: 'string.min', value: '[redacted]' }]],
      ['yup', 'YupSignup.validate(', [{ field: 'email', message: 'email must be a valid email', code: 'email', value: 'nope' }, { field: 'age', code: 'min', value: 1.5 }]],
      ['valibot', 'v.safeParse(ValiSignup', [{ field: 'email', message: 'Invalid email: Received "nope"', code: 'email', value: 'nope' }]],
      ['ajv', 'validateSignup(req.body)', [{ field: 'email', message: 'must NOT have fewer than 6 characters', code: 'minLength' }, { field: 'age', code: 'type' }]],
    ];
    for (const [library, call, errors] of cases) {
      const refused = await send('POST', `/v/${library}`, {}, { email: 'nope', age: 1.5, password: 'tiny-secret' });
      expect(refused.status).toBe(400);
      // zod, and valibot's ES module build, are followed through the hooks, which need module.registerHooks.
      // Without them, a 400 with no refusal recorded says that zod (which the app loaded) is not followed.
      if (!HOOKS && (library === 'zod' || (library === 'valibot' && fixture.endsWith('.mjs')))) {
        expect(refused.checks).toEqual([expect.objectContaining({ library: 'zod', verdict: 'unseen' })]);
        continue;
      }
      expect(refused.checks).toEqual([expect.objectContaining({ library, verdict: 'refused', at: line(call), fields: { errors: errors.map((e) => expect.objectContaining(e)) } })]);
      expect(await refused.page()).toContain(`<strong>Refused by ${library}</strong></a>: <span class="failure-reason">${errors[0].field}: `);
      const passed = await send('POST', `/v/${library}`, {}, { email: 'ada@example.com', age: 20 });
      expect(passed.status).toBe(200);
      expect(passed.checks).toEqual([]);
    }
    expect(JSON.stringify(readRows(database))).not.toContain('tiny-secret');
  });

  it('cors, a CSRF check and a body parser\'s limit: the origin refused, the check that failed, the limit and the size', async () => {
    const cors = await send('GET', '/api/data', { origin: 'https://evil.example' });
    expect(cors.status).toBe(200);
    // The allow-list the origin was checked against, and the line that mounted cors(): an array, a RegExp, the app's function.
    expect(cors.checks).toEqual([expect.objectContaining({ library: 'cors', verdict: 'refused', reason: 'origin https://evil.example is not allowed: the answer has no Access-Control-Allow-Origin', fields: { origin: 'https://evil.example', allowed: ['https://app.example'] }, at: line("app.use('/api', cors(") })]);
    expect((await send('GET', '/api/data', { origin: 'https://app.example' })).checks).toEqual([]);
    const pattern = await send('GET', '/partner/data', { origin: 'https://evil.example' });
    expect(pattern.checks).toEqual([expect.objectContaining({ library: 'cors', fields: { origin: 'https://evil.example', allowed: '/\\.partner\\.example$/' }, at: line("app.use('/partner', cors(") })]);
    const decided = await send('OPTIONS', '/decided/data', { origin: 'https://evil.example', 'access-control-request-method': 'PUT' });
    expect(decided.checks).toEqual([expect.objectContaining({ library: 'cors', fields: { origin: 'https://evil.example', method: 'PUT', allowed: "decided by the app's function allowListed" }, at: line("app.use('/decided', cors(") })]);
    expect(await decided.page('security')).toContain('decided by the app&#39;s function allowListed');
    expect((await send('GET', '/decided/data', { origin: 'https://ok.example' })).checks).toEqual([]);

    const csrf = await send('POST', '/transfer', {}, {});
    expect(csrf.status).toBe(403);
    expect(csrf.checks[0]).toMatchObject({ library: 'csrf-csrf', verdict: 'refused', reason: 'invalid csrf token' });

    const big = await send('POST', '/notes', {}, { title: 'x'.repeat(3000) });
    expect(big.status).toBe(413);
    expect(big.checks[0]).toMatchObject({ library: 'body-parser', reason: 'request entity too large', fields: { limit: 1024, length: 3012, type: 'entity.too.large' }, at: line('app.use(express.json(') });
  });

  it('names no library for a 404 the profiler\'s notFound answered', async () => {
    const res = await send('GET', '/nowhere');
    expect(res.status).toBe(404);
    expect(res.checks).toEqual([]);
  });

  it('keeps no secret the requests sent', async () => {
    await send('POST', '/login', {}, { username: 'ada', password: ADA_PASSWORD });
    const stored = JSON.stringify(readRows(database));
    expect(stored).toContain('Incorrect password.');
    expect(stored).not.toContain(ADA_PASSWORD);
    expect(stored).not.toContain('wrong-password-1');
    expect(stored).not.toContain('hash-not-shown');
    expect(stored).not.toContain(jwt.sign({ sub: 'ada', aud: 'notes', exp: 1_700_000_060 }, JWT_KEY).split('.')[2]);
  });
});

describe('zod without the hooks', () => {
  const KEY = 'zod-order-key';
  const signUp = async (order: string) => {
    const app = await startFixture(path.resolve('test/fixtures/refusals/zod-order.cjs'), [tempDb(), order]);
    try {
      const res = await fetch(`${app.url}/signup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'not-an-address', age: 1.5 }) });
      expect(res.status).toBe(400);
      const token = res.headers.get('x-debug-token');
      const security = (await (await fetch(`${app.url}/_profiler/${token}?panel=security`, { headers: { accept: 'application/json', 'x-profiler-secret': KEY } })).json()).data;
      const page = await (await fetch(`${app.url}/_profiler/${token}`, { headers: { 'x-profiler-secret': KEY } })).text();
      return { security, page };
    } finally {
      await app.stop();
    }
  };

  it('a zod loaded before the profiler: the failure card and the security panel say how to follow it', async () => {
    const { security, page } = await signUp('zod-first');
    expect(security.checks).toEqual([expect.objectContaining({ library: 'zod', verdict: 'unseen', reason: expect.stringContaining('node --import express-web-profiler/hooks') })]);
    expect(security.refused).toBe(0);
    expect(page).toContain('Not followed: zod');
    expect(page).toContain('node --import express-web-profiler/hooks');
  });

  it.skipIf(!HOOKS)('a short password a zod refine quotes in its message is cut from it, though zod keeps no value', async () => {
    const app = await startFixture(path.resolve('test/fixtures/refusals/zod-order.cjs'), [tempDb(), 'profiler-first']);
    try {
      const res = await fetch(`${app.url}/password`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ password: 'pw7ab12' }) });
      // The app's own answer quotes it: the client gets it, the profile does not.
      expect(await res.json()).toEqual({ error: 'password pw7ab12 is too short' });
      const profile = await (await fetch(`${app.url}/_profiler/${res.headers.get('x-debug-token')}`, { headers: { accept: 'application/json', 'x-profiler-secret': KEY } })).json();
      const [check] = profile.collectors.security.checks;
      expect(check.fields.errors[0]).toMatchObject({ field: 'password', message: 'password [redacted] is too short' });
      expect(JSON.stringify(profile.collectors.security)).not.toContain('pw7ab12');
    } finally {
      await app.stop();
    }
  });

  it('a zod loaded after the profiler is followed without the hooks where Node can (22.15 and later), and said so where it cannot', async () => {
    const { security } = await signUp('profiler-first');
    if (HOOKS) {
      expect(security.checks).toEqual([expect.objectContaining({ library: 'zod', verdict: 'refused', fields: { errors: [expect.objectContaining({ field: 'email', code: 'invalid_format' }), expect.objectContaining({ field: 'age' })] } })]);
    } else {
      expect(security.checks).toEqual([expect.objectContaining({ library: 'zod', verdict: 'unseen' })]);
    }
  });
});

describe.skipIf(!HOOKS)('valibot under the hooks', () => {
  it("keeps its errors' stacks as they are bare: its module's own URL, no frame of the profiler's", async () => {
    const script = path.resolve('test/fixtures/refusals/valibot-stack.mjs');
    const run = (args: string[]) => new Promise<string>((resolve, reject) => execFile(process.execPath, [...args, script], (err, out) => (err ? reject(err) : resolve(out))));
    const [bare, hooked] = await Promise.all([run([]), run(['--import', path.resolve('dist/hooks.js')])]);
    expect(bare).toContain('ValiError: Invalid email');
    expect(bare).toMatch(/valibot\/dist\/index\.mjs:\d+:\d+\)/);
    expect(hooked).toBe(bare);
  });
});
