import express, { type NextFunction, type Request, type Response } from 'express';
import express4 from 'express4';
import { jwtVerify, SignJWT } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { webProfiler } from '../src/index.js';
import { listen, readRows, tempDb, type Running } from './helpers.js';

const running: Running[] = [];
afterAll(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
});

const KEY = new TextEncoder().encode('a-signing-key-of-thirty-two-bytes!');
const BIG_MAP = new Map(Array.from({ length: 1_000_000 }, (_, i) => [`user:${i}`, { id: i }]));

/** Refusals that throw: the library's own fields say why (a body parser's limit, a token's claim). */
describe.each([['Express 5', express], ['Express 4', express4 as unknown as typeof express]] as const)('%s: an error\'s own fields are on its exception', (_name, lib) => {
  async function serve() {
    const database = tempDb();
    const profiler = webProfiler({ database, onError: () => {} });
    const app = lib();
    app.use(profiler);
    app.post('/notes', lib.json({ limit: '1kb' }), (_req, res) => res.status(201).json({ ok: true }));
    app.get('/me', async (req: Request, res: Response, next: NextFunction) => {
      try {
        const { payload } = await jwtVerify(String(req.get('authorization')).replace(/^Bearer /, ''), KEY);
        res.json({ sub: payload.sub });
      } catch (err) {
        next(Object.assign(err as Error, { status: 401 }));
      }
    });
    app.get('/vault', () => {
      // What an HTTP client hangs on its errors: an instance is named, bytes are counted, neither walked.
      class VaultResponse { socket = { secret: 'internal' }; }
      throw Object.assign(new Error('the vault refused'), { vault: 'main', password: 'vault-pass-' + process.pid, response: new VaultResponse(), body: Buffer.from('12345') });
    });
    // A cache of a million entries hung on an error: described from its first entries, at the cost of those.
    app.get('/cache', () => {
      throw Object.assign(new Error('the cache is full'), { entries: BIG_MAP });
    });
    app.use(profiler.errorHandler);
    const server = await listen(app);
    running.push(server);
    const profile = async (res: globalThis.Response) => {
      profiler.flush();
      return (await fetch(`${server.url}/_profiler/${res.headers.get('x-debug-token')}`, { headers: { accept: 'application/json' } })).json();
    };
    return { server, profile, database };
  }

  it('express.json\'s 413: the type it gives, the limit and the length that broke it, on the panel too', async () => {
    const { server, profile } = await serve();
    const res = await fetch(`${server.url}/notes`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify({ text: 'x'.repeat(5000) }) });
    expect(res.status).toBe(413);
    const chain = (await profile(res)).collectors.exception.chain;
    expect(chain[0]).toMatchObject({ status: 413, details: { type: 'entity.too.large', limit: 1024, length: 5011, expected: 5011 } });
    const page = await (await fetch(`${server.url}/_profiler/${res.headers.get('x-debug-token')}?panel=exception`)).text();
    expect(page).toContain('<dt class="mono">limit</dt><dd class="mono">1024</dd>');
    expect(page).toContain('<dt class="mono">type</dt><dd class="mono">entity.too.large</dd>');
  });

  it('jose\'s expired token: the claim and the reason as jose gives them', async () => {
    const { server, profile } = await serve();
    const expired = await new SignJWT({ sub: 'ada' }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt(1_700_000_000).setExpirationTime(1_700_000_060).sign(KEY);
    const res = await fetch(`${server.url}/me`, { headers: { authorization: `Bearer ${expired}`, accept: 'application/json' } });
    expect(res.status).toBe(401);
    const [error] = (await profile(res)).collectors.exception.chain;
    expect(error).toMatchObject({ class: 'JWTExpired', code: 'ERR_JWT_EXPIRED', details: { claim: 'exp', reason: 'check_failed', payload: { sub: 'ada', exp: 1_700_000_060 } } });
  });

  it('a field named like a secret is redacted, in the profile and on the debug page', async () => {
    const { server, profile, database } = await serve();
    const res = await fetch(`${server.url}/vault`, { headers: { accept: 'application/json' } });
    expect(res.status).toBe(500);
    const [error] = (await profile(res)).collectors.exception.chain;
    expect(error.details).toEqual({ vault: 'main', password: '[redacted]', response: '[VaultResponse]', body: '[5 bytes]' });
    expect(JSON.stringify(readRows(database))).not.toContain(`vault-pass-${process.pid}`);
  });

  it('a Map of a million entries: its first 30 and how many more, read in as many steps on the request\'s thread', async () => {
    const { server, profile } = await serve();
    const res = await fetch(`${server.url}/cache`, { headers: { accept: 'application/json' } });
    expect(res.status).toBe(500);
    const [error] = (await profile(res)).collectors.exception.chain;
    expect(Object.keys(error.details.entries)).toHaveLength(31);
    expect(error.details.entries['user:0']).toEqual({ id: 0 });
    expect(error.details.entries['…']).toBe('999970 more');
    // The error page's own time (Server-Timing), beside one bare walk of the Map timed here: walking
    // every entry as it was took about 45 such walks.
    const spent = Number(/error-page;dur=([\d.]+)/.exec(res.headers.get('server-timing') ?? '')?.[1]);
    const walked = performance.now();
    BIG_MAP.forEach(() => {});
    expect(spent).toBeLessThan(5 * (performance.now() - walked));
  });
});
