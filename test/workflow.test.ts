import { execFile, execFileSync, fork } from 'node:child_process';
import { promisify } from 'node:util';
import express from 'express';
import http from 'node:http';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { run } from '../src/cli/run.js';
import { webProfiler } from '../src/index.js';
import { listen, tempDb, type Running } from './helpers.js';

const running: Running[] = [];
const closing: (() => void)[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
});
afterAll(() => closing.forEach((close) => close()));

/** An app whose /echo answers with what it received, and whose /checkout fails for a declined card. */
async function start(database = tempDb()) {
  const profiler = webProfiler({ database, onError: () => {}, flushInterval: 20 });
  closing.push(() => profiler.close());
  const received: { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }[] = [];
  const app = express();
  app.use(profiler);
  app.use(express.json());
  app.all('/echo', express.text({ type: 'text/*' }), (req, res) => {
    received.push({ method: req.method, url: req.originalUrl, headers: req.headers, body: typeof req.body === 'string' ? req.body : JSON.stringify(req.body) });
    res.json({ ok: true });
  });
  app.get('/checkout', (req, res) => {
    req.log.info('checking out', { card: req.query.card });
    if (req.query.card === 'declined') throw new Error('card declined');
    res.set('X-Cart', 'ok').json({ paid: true });
  });
  app.use(profiler.notFound);
  app.use(profiler.errorHandler);
  const server = await listen(app);
  running.push(server);
  return { ...server, profiler, received, database };
}

/** Reads Server-Sent Events from a stream as they come. */
async function events(url: string, signal: AbortSignal) {
  const res = await fetch(url, { signal, headers: { accept: 'text/event-stream' } });
  expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
  const reader = res.body!.getReader();
  const seen: { event: string; data: any }[] = [];
  let buffer = '';
  (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += new TextDecoder().decode(value);
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event = /^event: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (event && data) seen.push({ event, data: JSON.parse(data) });
        }
      }
    } catch {
      // Aborted.
    }
  })();
  return seen;
}

/** Waits for what a check looks for, with a ceiling generous enough for a loaded machine. */
const until = async (check: () => boolean, ms = 30_000) => {
  for (const started = Date.now(); Date.now() - started < ms; await new Promise((r) => setTimeout(r, 20))) if (check()) return true;
  return check();
};

describe('the live list', () => {
  it('streams each request once it is stored, from this process and from another on the same file', async () => {
    const app = await start();
    const stop = new AbortController();
    closing.push(() => stop.abort());
    const seen = await events(`${app.url}/_profiler/stream`, stop.signal);
    const res = await fetch(`${app.url}/checkout?card=ok`);
    await res.text();
    const token = res.headers.get('x-debug-token')!;
    expect(await until(() => seen.some((e) => e.data.token === token))).toBe(true);
    const event = seen.find((e) => e.data.token === token)!;
    expect(event.event).toBe('profile');
    expect(event.data).toMatchObject({ token, method: 'GET', url: `${app.url}/checkout?card=ok`, status: 200 });
    expect(typeof event.data.time).toBe('number');
    expect(typeof event.data.duration).toBe('number');
    // The stream and the profiler's own pages are never recorded.
    expect(seen.every((e) => !e.data.url.includes('/_profiler'))).toBe(true);

    const child = fork(path.resolve('test/fixtures/recording-server.mjs'), [app.database], { stdio: ['ignore', 'ignore', 'ignore', 'ipc'] });
    closing.push(() => child.kill());
    const port = await new Promise<number>((resolve) => child.on('message', (m: any) => m.type === 'ready' && resolve(m.port)));
    const other = await fetch(`http://127.0.0.1:${port}/hello`);
    await other.text();
    const otherToken = other.headers.get('x-debug-token')!;
    expect(await until(() => seen.some((e) => e.data.token === otherToken))).toBe(true);
    child.send({ type: 'stop' });
  });

  it('applies the search filters to the stream, and bounds the number of open streams', async () => {
    const app = await start();
    const stop = new AbortController();
    closing.push(() => stop.abort());
    const failures = await events(`${app.url}/_profiler/stream?status_code=500`, stop.signal);
    await (await fetch(`${app.url}/checkout?card=ok`)).text();
    const bad = await fetch(`${app.url}/checkout?card=declined`);
    await bad.text();
    expect(await until(() => failures.length > 0)).toBe(true);
    // The stream sends in the order of storing: had the first request passed the filter, it would have come first.
    expect(failures.map((e) => e.data.token)).toEqual([bad.headers.get('x-debug-token')]);
    const more = await Promise.all(Array.from({ length: 15 }, () => fetch(`${app.url}/_profiler/stream`, { signal: stop.signal })));
    expect(more.every((r) => r.status === 200)).toBe(true);
    const refused = await fetch(`${app.url}/_profiler/stream`, { headers: { accept: 'application/json' } });
    expect(refused.status).toBe(503);
    expect((await refused.json()).title).toBe('Too many live lists');
  });

  it('sorts the list by duration, slowest first', async () => {
    const app = await start();
    for (let i = 0; i < 3; i++) await (await fetch(`${app.url}/checkout?card=ok`)).text();
    app.profiler.flush();
    const rows = (await (await fetch(`${app.url}/_profiler/search?sort=duration`, { headers: { accept: 'application/json' } })).json()).profiles as { duration: number }[];
    expect(rows.length).toBe(3);
    expect(rows.map((r) => r.duration)).toEqual([...rows.map((r) => r.duration)].sort((a, b) => b - a));
    expect((await fetch(`${app.url}/_profiler/search?sort=size`)).status).toBe(400);
  });

  it('web-profiler tail prints each stored request, one line each', async () => {
    const app = await start();
    const lines: string[] = [];
    const stop = new AbortController();
    const done = run(['tail', '--db', app.database], { out: (l) => lines.push(l), err: (l) => lines.push(`ERR ${l}`), tty: true }, {}, stop.signal);
    await new Promise((r) => setTimeout(r, 100));
    const res = await fetch(`${app.url}/checkout?card=declined`);
    await res.text();
    expect(await until(() => lines.length > 0)).toBe(true);
    stop.abort();
    expect(await done).toBe(0);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(res.headers.get('x-debug-token'));
    expect(lines[0]).toContain('\x1b[31m500\x1b[0m');
    expect(lines[0]).toContain(`GET`);
  });
});

describe('copy as cURL', () => {
  it('sends the same request again from a real shell, hostile values and all; secrets come from variables', async () => {
    const app = await start();
    const hostile = `'; touch /tmp/wp-pwned; echo '$(id) \`id\` "quoted" \\ back`;
    const body = { note: hostile, password: 'hunter2-secret', items: [1, 'two'] };
    const res = await fetch(`${app.url}/echo?q=${encodeURIComponent(hostile)}&token=query-secret`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer bearer-secret', 'x-hostile': hostile },
      body: JSON.stringify(body),
    });
    await res.text();
    app.profiler.flush();
    const token = res.headers.get('x-debug-token')!;
    const curl = await fetch(`${app.url}/_profiler/${token}/curl`);
    expect(curl.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    const command = await curl.text();
    for (const secret of ['hunter2-secret', 'bearer-secret', 'query-secret', '[redacted]']) expect(command).not.toContain(secret);
    // Numbered variables, each listed with the field it stands for.
    const legend = Object.fromEntries([...command.matchAll(/^#   (WP_SECRET_\d+): (\S+)$/gm)].map((m) => [m[2], m[1]]));
    expect(Object.keys(legend).sort()).toEqual(['authorization', 'password', 'token']);
    // Not execFileSync: the server that answers runs in this process.
    await promisify(execFile)('sh', ['-c', command], { env: { ...process.env, [legend.token]: 'query-secret', [legend.authorization]: 'bearer-secret', [legend.password]: 'hunter2-secret' }, timeout: 10_000 });
    expect(app.received).toHaveLength(2);
    const [original, replayed] = app.received;
    expect(replayed.method).toBe(original.method);
    expect(replayed.url).toBe(original.url);
    expect(JSON.parse(replayed.body)).toEqual(JSON.parse(original.body));
    for (const h of ['content-type', 'authorization', 'x-hostile', 'accept-language', 'sec-fetch-mode']) expect(replayed.headers[h]).toBe(original.headers[h]);
    expect(() => execFileSync('test', ['-e', '/tmp/wp-pwned'])).toThrow();

    const asFetch = await (await fetch(`${app.url}/_profiler/${token}/fetch`)).text();
    expect(asFetch).toMatch(/const (WP_SECRET_\d+) = ''; \/\/ redacted by the profiler \(authorization\): fill in/);
    expect(asFetch).toMatch(/"authorization": `Bearer \$\{WP_SECRET_\d+\}`/);
    for (const secret of ['hunter2-secret', 'bearer-secret', '[redacted]']) expect(asFetch).not.toContain(secret);
  });

  it('run by a developer, a command made from a hostile request sends none of their environment anywhere, and goes to this app', async () => {
    // What an attacker collects: a server of its own, here on loopback.
    const collected: string[] = [];
    const collector = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        collected.push(`${req.method} ${req.url} ${JSON.stringify(req.headers)} ${body}`);
        res.end();
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    const evil = `127.0.0.1:${(collector.address() as { port: number }).port}`;
    const app = await start();
    try {
      // Fields named after the developer's secrets, and a literal [redacted] after HOME=: sent with the attacker's Host.
      const body = JSON.stringify({ AWS_SECRET_ACCESS_KEY: 'x', GITHUB_TOKEN: 'x', NPM_TOKEN: 'x' });
      const token = await new Promise<string>((resolve, reject) => {
        const req = http.request(`${app.url}/echo?HOME=[redacted]&x=1`, { method: 'POST', headers: { host: evil, 'content-type': 'application/json', 'x-npm-token': '[redacted]' } }, (res) => {
          res.resume();
          res.on('end', () => resolve(String(res.headers['x-debug-token'])));
        });
        req.on('error', reject);
        req.end(body);
      });
      app.profiler.flush();
      const command = await (await fetch(`${app.url}/_profiler/${token}/curl`)).text();
      expect(command).toContain(`WARNING: this request was sent to "http://${evil}"`);
      expect(command).not.toMatch(/\$(HOME|AWS_SECRET_ACCESS_KEY|GITHUB_TOKEN|NPM_TOKEN|X_NPM_TOKEN)\b/);
      const secrets = { HOME: '/home/developer-secret-home', AWS_SECRET_ACCESS_KEY: 'aws-developer-secret', GITHUB_TOKEN: 'ghp_developersecret', NPM_TOKEN: 'npm-developer-secret' };
      const before = app.received.length;
      await promisify(execFile)('sh', ['-c', command], { env: { ...process.env, ...secrets }, timeout: 10_000 });
      expect(collected).toEqual([]);
      // It went to this app, with none of the developer's values in it.
      expect(app.received).toHaveLength(before + 1);
      const replayed = JSON.stringify(app.received[app.received.length - 1]);
      for (const value of Object.values(secrets)) expect(replayed).not.toContain(value);
    } finally {
      collector.close();
    }
  });

  it('quotes the method too, and marks a body cut at the limit instead of sending it', async () => {
    const profiler = webProfiler({ database: tempDb(), onError: () => {}, bodyLimit: 16 });
    closing.push(() => profiler.close());
    const app = express();
    app.use(profiler);
    app.all('/x', express.text(), (_req, res) => res.send('ok'));
    const server = await listen(app);
    running.push(server);
    const res = await fetch(`${server.url}/x`, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: 'a body longer than sixteen bytes' });
    await res.text();
    profiler.flush();
    const command = await (await fetch(`${server.url}/_profiler/${res.headers.get('x-debug-token')}/curl`)).text();
    expect(command).toContain("curl -X 'PUT'");
    expect(command).toContain('# Note: the body (32 bytes) was cut at the profiler\'s body limit: it is not sent.');
    expect(command).not.toContain('--data-raw');
  });
});

describe('compare two profiles', () => {
  it('lists exactly the fields that differ, and shows them side by side', async () => {
    const app = await start();
    const ok = await fetch(`${app.url}/checkout?card=ok`, { headers: { accept: 'application/json' } });
    await ok.text();
    const failed = await fetch(`${app.url}/checkout?card=declined`, { headers: { accept: 'application/json' } });
    await failed.text();
    app.profiler.flush();
    const [a, b] = [ok, failed].map((r) => r.headers.get('x-debug-token'));
    const res = await fetch(`${app.url}/_profiler/${a}/compare/${b}`, { headers: { accept: 'application/json' } });
    expect(res.status).toBe(200);
    const { differences } = await res.json();
    const paths = differences.map((d: any) => d.path).filter((p: string) => !p.startsWith('totals.'));
    expect(paths.sort()).toEqual([
      'exception', 'logs', 'request.query.card', 'response.body', 'response.headers.content-length', 'response.headers.content-type',
      'response.headers.etag', 'response.headers.x-cart', 'status', 'url',
      // The 500 is the debug error page's, with headers of its own.
      'response.headers.cache-control', 'response.headers.server-timing', 'response.headers.vary', 'response.headers.x-debug-exception', 'response.headers.x-debug-exception-file',
    ].sort());
    expect(differences.find((d: any) => d.path === 'status')).toEqual({ path: 'status', left: 200, right: 500 });
    expect(differences.find((d: any) => d.path === 'exception')).toEqual({ path: 'exception', left: null, right: 'Error: card declined' });
    const page = await (await fetch(`${app.url}/_profiler/${a}/compare/${b}`)).text();
    expect(page).toMatch(/<tr class="differs"><th scope="row" class="mono">status <span class="tag warn">differs<\/span><\/th>/);
    // The profile offers the comparison with recent requests to the same route.
    const profile = await (await fetch(`${app.url}/_profiler/${a}`)).text();
    expect(profile).toContain(`href="/_profiler/${a}/compare/${b}"`);
    expect((await fetch(`${app.url}/_profiler/${a}/compare/nothex`)).status).toBe(404);
  });
});
