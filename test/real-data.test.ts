// What real apps send and do, as the profiler must take it: field names that only look secret,
// password hashes in any column, compressed bodies, catch-all routes and error handlers.
import express from 'express';
import express4Module from 'express4';
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import * as zlib from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { describeBytes } from '../src/redaction/body.js';
import { isSecretKey, redactHeaders, redactText, redactValue } from '../src/redaction/redact.js';
import { webProfiler, type WebProfiler } from '../src/index.js';
import { DEFAULT_REDACT_KEYS as KEYS } from '../src/options.js';
import { listen, tempDb, type Running } from './helpers.js';

const express4 = express4Module as unknown as typeof express;
const running: Running[] = [];
const profilers: WebProfiler[] = [];
afterAll(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
  for (const p of profilers) p.close();
});

describe('redaction fits real data', () => {
  it('matches keys by their words: auth, authToken and x-auth-token are secret; author and authority are not', () => {
    for (const key of ['auth', 'authToken', 'x-auth-token', 'AUTH_KEY', 'accessToken', 'access_token', 'userpassword', 'newPassword', 'apiKey', 'sessionId', 'Authorization', 'pwd']) {
      expect([key, isSecretKey(key, KEYS)]).toEqual([key, true]);
    }
    for (const key of ['author', 'authority', 'authors', 'coauthor', 'hash', 'email', 'compass', 'passenger', 'title']) {
      expect([key, isSecretKey(key, KEYS)]).toEqual([key, false]);
    }
    expect(redactText('/articles?author=conduit&token=abc', KEYS)).toBe('/articles?author=conduit&token=[redacted]');
  });

  it('hides password hashes by their shape wherever they are: SQL, parameters, log lines', () => {
    const bcrypt = '$2b$10$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234';
    const argon2 = '$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA';
    const scrypt = '$scrypt$ln=16,r=8,p=1$c2FsdA$aGFzaGhhc2g';
    const pbkdf2 = 'pbkdf2_sha256$600000$salt123$abcdefghijklmnopqrstuvwxyz0123456789AB=';
    const sha512crypt = '$6$rounds=5000$saltsalt$' + 'a'.repeat(86);
    for (const hash of [bcrypt, argon2, scrypt, pbkdf2, sha512crypt]) {
      expect(redactText(`INSERT INTO users (hash) VALUES ('${hash}')`, KEYS)).toBe("INSERT INTO users (hash) VALUES ('[redacted]')");
      expect(redactValue({ hash, note: `stored ${hash} for ada` }, KEYS)).toEqual({ hash: '[redacted]', note: 'stored [redacted] for ada' });
    }
    // Dollars that are not a hash stay.
    expect(redactText('total $5, placeholders $1 and $2', KEYS)).toBe('total $5, placeholders $1 and $2');
  });

  it('hides credentials written as prose by the shapes secret scanners know, and the headers and keys that carry them', () => {
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U';
    const lines = [
      'calling upstream with Bearer abc123def456ghi789',
      `session from ${jwt} expired`,
      'key AKIAIOSFODNN7EXAMPLE rejected',
      'push with ghp_abcdefghijklmnopqrstuvwxyz0123456789 failed',
      'charge via sk_live_4eC39HqLyjWDarjtT1zdp7dc declined',
      'slack xoxb-123456789012-abcdefghijkl said no',
    ];
    const redacted = lines.map((line) => redactText(line, KEYS));
    expect(redacted).toEqual([
      'calling upstream with Bearer [redacted]',
      'session from [redacted] expired',
      'key [redacted] rejected',
      'push with [redacted] failed',
      'charge via [redacted] declined',
      'slack [redacted] said no',
    ]);
    // Words that only start like them stay.
    expect(redactText('a Bearer of news; skip the ghp_ prefix', KEYS)).toBe('a Bearer of news; skip the ghp_ prefix');
    expect(redactText('/webhook?sig=abc123&id=7', KEYS)).toBe('/webhook?sig=[redacted]&id=7');
    expect(redactHeaders({ 'ocp-apim-subscription-key': 'k' }, KEYS)).toEqual({ 'ocp-apim-subscription-key': '[redacted]' });
  });

  it('hides secret values, not structure: booleans, numbers, null and dates stay; an object keeps its e-mail', () => {
    const at = new Date(0);
    expect(redactValue({ password: false, token: null, secretCount: 3, sessionStarted: at, credentials: { email: 'ada@example.com', password: 'pw', note: 'n' } }, KEYS)).toEqual({
      password: false, token: null, secretCount: 3, sessionStarted: at, credentials: { email: 'ada@example.com', password: '[redacted]', note: '[redacted]' },
    });
    expect(redactValue({ password: 'hunter2', apiKey: ['a', 'b'] }, KEYS)).toEqual({ password: '[redacted]', apiKey: ['[redacted]', '[redacted]'] });
  });
});

describe('compressed response bodies are shown decoded', () => {
  const json = JSON.stringify({ articles: Array.from({ length: 50 }, (_, i) => ({ slug: `a-${i}`, token: `t-${i}` })) });
  const raw = (bytes: Buffer) => ({ bytes, size: bytes.length });
  const zstd = (zlib as unknown as { zstdCompressSync?: (b: Buffer) => Buffer }).zstdCompressSync;
  const codings: [string, (b: Buffer) => Buffer][] = [['gzip', gzipSync], ['deflate', deflateSync], ['br', brotliCompressSync], ...(zstd ? [['zstd', zstd] as [string, (b: Buffer) => Buffer]] : [])];

  it.each(codings)('%s: decoded, redacted, its encoding said', (coding, compress) => {
    const body = describeBytes(raw(compress(Buffer.from(json))), 'application/json', 64 * 1024, KEYS, coding);
    expect(body).toMatchObject({ kind: 'json', encoding: coding, truncated: false });
    expect((body.json as { articles: { token: string }[] }).articles[0]).toEqual({ slug: 'a-0', token: '[redacted]' });
  });

  it('raw deflate, as some servers send it, a body cut where it was kept, and a bomb, each within the limit', () => {
    expect(describeBytes(raw(deflateRawSync(Buffer.from('plain text'))), 'text/plain', 1024, KEYS, 'deflate')).toMatchObject({ kind: 'text', text: 'plain text' });
    const long = gzipSync(Buffer.from('x'.repeat(10_000) + 'y'.repeat(10_000)));
    const cut = describeBytes({ bytes: long.subarray(0, Math.floor(long.length / 2)), size: long.length }, 'text/plain', 64 * 1024, KEYS, 'gzip');
    expect(cut.kind).toBe('text');
    expect(cut.text!.startsWith('xxxx')).toBe(true);
    const bomb = describeBytes(raw(gzipSync(Buffer.alloc(20 * 1024 * 1024, 'a'))), 'text/plain', 4096, KEYS, 'gzip');
    expect(bomb).toMatchObject({ kind: 'text', truncated: true, encoding: 'gzip' });
    expect(bomb.text!.length).toBeGreaterThan(3000);
    expect(bomb.text!.length).toBeLessThanOrEqual(4096);
    // Bytes that are not in the encoding they claim: binary, said so, nothing decoded.
    expect(describeBytes(raw(Buffer.from('not gzip at all')), 'text/plain', 1024, KEYS, 'gzip')).toMatchObject({ kind: 'binary', encoding: 'gzip' });
  });
});

describe('notFound with the app\'s own error handling (405s asked for: methodNotAllowed)', () => {
  for (const [name, make] of [['Express 5', express], ['Express 4', express4]] as const) {
    it(`${name}: a catch-all GET route makes no other method a 405; a real 405 keeps its status and Allow through a handler that makes errors 500s`, async () => {
      const profiler = webProfiler({ database: tempDb(), onError: () => {}, methodNotAllowed: true });
      profilers.push(profiler);
      const app = make();
      app.use(profiler);
      app.post('/orders', (_req, res) => res.status(201).end());
      app.get(name === 'Express 5' ? '/{*splat}' : '*', (_req, res) => res.send('the SPA'));
      app.use(profiler.notFound);
      app.use((err: { status?: number; statusCode?: number; expose?: boolean }, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
        res.status(500).json({ status: err.status, statusCode: err.statusCode, expose: err.expose });
      });
      const server = await listen(app);
      running.push(server);
      expect(await (await fetch(`${server.url}/anything`)).text()).toBe('the SPA');
      const post = await fetch(`${server.url}/anything`, { method: 'POST', headers: { accept: 'application/json' } });
      expect(post.status).toBe(404);
      expect(await post.json()).toEqual({ status: 404, statusCode: 404, expose: true });
      const put = await fetch(`${server.url}/orders`, { method: 'PUT', headers: { accept: 'application/json' } });
      expect(put.status).toBe(405);
      expect(put.headers.get('allow')).toBe('POST');
      expect(await put.json()).toEqual({ status: 405, statusCode: 405, expose: true });
    });

    it(`${name}: a path that sub-apps mounted in the app (and in them) have for other methods is a 405 with their Allow`, async () => {
      const profiler = webProfiler({ database: tempDb(), onError: () => {}, methodNotAllowed: true });
      profilers.push(profiler);
      const app = make();
      const api = make();
      const admin = make();
      admin.delete('/users/:id', (_req, res) => res.status(204).end());
      api.post('/orders', (_req, res) => res.status(201).end());
      api.use('/admin', admin);
      app.use(profiler);
      app.use('/api', api);
      app.use(profiler.notFound);
      const server = await listen(app);
      running.push(server);
      const asked = async (method: string, path: string) => {
        const res = await fetch(server.url + path, { method, headers: { accept: 'application/json' } });
        return [res.status, res.headers.get('allow')];
      };
      expect(await asked('PUT', '/api/orders')).toEqual([405, 'POST']);
      expect(await asked('GET', '/api/admin/users/7')).toEqual([405, 'DELETE']);
      expect(await asked('GET', '/api/nowhere')).toEqual([404, null]);
      expect(await asked('POST', '/api/orders')).toEqual([201, null]);
    });
  }
});
