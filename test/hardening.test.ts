// What an outside audit found, each reproduced: the profiler is never the way in, never takes the app down.
import express, { type NextFunction, type Request, type Response } from 'express';
import express4Module from 'express4';
import { execFile } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { cpSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { createDemoApp } from '../src/demo/app.js';
import { configFrom } from '../src/demo/config.js';
import { redactText } from '../src/redaction/redact.js';
import { describeException } from '../src/errors/describe.js';
import { resolveOptions } from '../src/options.js';
import { webProfiler, type ProfilerOptions, type WebProfiler } from '../src/index.js';
import { serialise, type Profile } from '../src/storage/profile.js';
import { WriteQueue } from '../src/storage/queue.js';
import { SqliteSink } from '../src/storage/sink.js';
import { ProfileStore } from '../src/storage/store.js';
import { TokenBitmap } from '../src/storage/token-bitmap.js';
import { listen, readRows, tempDb, tempDir, type Running } from './helpers.js';

const express4 = express4Module as unknown as typeof express;
const running: Running[] = [];
const profilers: WebProfiler[] = [];
afterAll(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
  for (const p of profilers) p.close();
});

async function serve(setup: (app: express.Express, profiler: WebProfiler) => void, options: ProfilerOptions = {}, lib: typeof express = express) {
  const database = options.database ?? tempDb();
  const errors: string[] = [];
  const profiler = webProfiler({ database, onError: (m) => errors.push(m), ...options });
  profilers.push(profiler);
  const app = lib();
  app.use(profiler);
  setup(app, profiler);
  const server = await listen(app);
  running.push(server);
  return { ...server, profiler, database, errors };
}

const withErrorPages = (app: express.Express, profiler: WebProfiler) => {
  app.use(profiler.notFound);
  app.use(profiler.errorHandler);
};

describe('1. frames come from the call sites, code only from modules the process loaded', () => {
  const INJECTED = `x\n    at x (/etc/passwd:1:1)\n    at y (${path.resolve('package.json')}:1:1)`;

  it('text in a message never becomes a frame, in any page, header or profile', async () => {
    const { url, profiler, database } = await serve((app, p) => {
      app.get('/users/:id', (req) => {
        throw new Error(`User not found: ${req.params.id}`);
      });
      withErrorPages(app, p);
    });
    const target = `/users/${encodeURIComponent(INJECTED)}`;
    for (const accept of ['text/html', 'application/json', '*/*']) {
      const res = await fetch(url + target, { headers: { accept } });
      expect(res.status).toBe(500);
      const body = await res.text();
      expect(body, accept).not.toMatch(/root:x:0|"name": "express-web-profiler"/);
      expect(res.headers.get('x-debug-exception-file'), accept).toMatch(/hardening\.test\.ts:\d+$/);
      if (accept === 'application/json') {
        const files = (JSON.parse(body) as { trace: { file: string }[] }).trace.map((f) => f.file);
        expect(files).not.toContain('/etc/passwd');
        expect(files.some((f) => f.endsWith('package.json'))).toBe(false);
      }
    }
    profiler.flush();
    const frames = readRows(database).flatMap((r) => r.collectors.exception.chain[0].frames as { file: string; excerpt?: { lines: string[] } }[]);
    expect(frames.map((f) => f.file)).toContain(path.resolve('test/hardening.test.ts'));
    expect(frames.filter((f) => f.file === '/etc/passwd' || f.file.endsWith('package.json'))).toEqual([]);
    expect(JSON.stringify(frames.map((f) => f.excerpt))).not.toMatch(/root:x:0|"name": "express-web-profiler"/);
  });

  it('reads no dotfile, kernel file, or source outside the app that was never loaded, and at most four files an error', () => {
    const outside = path.join(tempDir(), 'secret.js');
    writeFileSync(outside, 'const secret = "outside-the-app";\n');
    const inside = path.resolve('test-artifacts', `sources-${process.pid}`);
    mkdirSync(inside, { recursive: true });
    writeFileSync(path.join(inside, '.env.js'), 'DOTFILE_SECRET=1\n');
    const files = Array.from({ length: 8 }, (_, i) => path.join(inside, `app${i}.js`));
    for (const [i, file] of files.entries()) writeFileSync(file, `export const line${i} = ${i};\n`);
    const huge = path.join(inside, 'huge.js');
    writeFileSync(huge, `// HUGE_FILE\n${'x'.repeat(2 * 1024 * 1024)}\n`);
    mkdirSync(path.join(inside, 'folder.js'));
    try {
      const crafted = new Error('m');
      crafted.stack = ['Error: m', `    at a (/proc/self/environ:1:1)`, `    at b (${path.join(inside, '.env.js')}:1:1)`, `    at c (${outside}:1:1)`,
        `    at d (${huge}:1:1)`, `    at e (${path.join(inside, 'folder.js')}:1:1)`, ...files.map((f, i) => `    at f${i} (${f}:1:1)`)].join('\n');
      const [error] = describeException(crafted, { excerpts: true }).chain;
      const shown = error.frames.filter((f) => f.excerpt).map((f) => f.file);
      expect(JSON.stringify(error.frames)).not.toMatch(/outside-the-app|DOTFILE_SECRET|HUGE_FILE/);
      // The huge file and the folder cost two of the four reads.
      expect(shown).toEqual(files.slice(0, 2));
    } finally {
      rmSync(inside, { recursive: true, force: true });
    }
  });
});

describe('2. production by any variable turns everything off', () => {
  it('APP_ENV=prod: no recording, no debug headers, no debug page', async () => {
    const before = process.env.APP_ENV;
    process.env.APP_ENV = 'prod';
    let profiler: WebProfiler;
    try {
      profiler = webProfiler({ database: tempDb() });
    } finally {
      if (before === undefined) delete process.env.APP_ENV;
      else process.env.APP_ENV = before;
    }
    const app = express();
    app.use(profiler);
    app.get('/fail', () => {
      throw new Error('secret internals');
    });
    app.use(profiler.notFound);
    app.use(profiler.errorHandler);
    const server = await listen(app);
    running.push(server);
    const res = await fetch(`${server.url}/fail`, { headers: { accept: 'text/html' } });
    expect(res.status).toBe(500);
    for (const name of ['x-debug-token', 'x-debug-token-link', 'x-robots-tag', 'x-debug-exception', 'x-debug-exception-file']) expect(res.headers.get(name), name).toBeNull();
    expect(await res.text()).not.toContain('secret internals');
    expect((await fetch(`${server.url}/_profiler/`)).status).toBe(404);
  });
});

describe('4. a writer thread that cannot start never freezes the app', () => {
  const run = promisify(execFile);
  const script = `
    import express from 'express';
    const { webProfiler } = await import(process.env.ENTRY);
    const messages = [];
    const profiler = webProfiler({ database: process.env.DB, onError: (m) => messages.push(m) });
    // What had happened when each step was done: a step that waited for the thread would come after its verdict.
    const createdBeforeTold = messages.length === 0;
    let answeredBeforeTold;
    const app = express();
    app.use(profiler);
    app.get('/x', (req, res) => res.send('ok'));
    const server = app.listen(0, '127.0.0.1', async () => {
      for (let i = 0; i < 25; i++) {
        const res = await fetch('http://127.0.0.1:' + server.address().port + '/x');
        if (res.status !== 200) throw new Error('status ' + res.status);
        answeredBeforeTold ??= messages.length === 0;
        await new Promise((r) => setTimeout(r, 160));
      }
      const flushed = profiler.flush();
      const stored = profiler.store()?.find({ limit: 100 }).length ?? 0;
      server.close();
      profiler.close();
      console.log(JSON.stringify({ createdBeforeTold, answeredBeforeTold, flushed, messages, stored }));
    });`;
  const child = async (entry: string) => {
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, ENTRY: entry, DB: tempDb() }, timeout: 30_000 });
    return JSON.parse(stdout.trim().split('\n').pop()!) as { createdBeforeTold: boolean; answeredBeforeTold: boolean; flushed: number; messages: string[]; stored: number };
  };

  it('under node --input-type=module -e (the worker does not inherit those flags): it records', async () => {
    const out = await child(path.resolve('dist/index.js'));
    expect(out.stored).toBe(25);
    expect(out.messages).toEqual([]);
  });

  it('bundled without its thread script: it answers at once, says so once, and stops recording', async () => {
    const bundle = path.resolve('test-artifacts', `bundle-${process.pid}`);
    rmSync(bundle, { recursive: true, force: true });
    cpSync(path.resolve('dist'), path.join(bundle, 'dist'), { recursive: true });
    cpSync(path.resolve('views'), path.join(bundle, 'views'), { recursive: true });
    rmSync(path.join(bundle, 'dist', 'storage', 'writer-thread.js'));
    try {
      const out = await child(path.join(bundle, 'dist', 'index.js'));
      // Nothing waited for the thread that cannot start: the profiler was made and the first request
      // answered before it gave up on the thread (after 3.5 s of retries); all 25 answered 200; the
      // flush, after the verdict, had nothing to write.
      expect(out.createdBeforeTold).toBe(true);
      expect(out.answeredBeforeTold).toBe(true);
      expect(out.flushed).toBe(0);
      expect(out.messages.filter((m) => /cannot start.*recording stopped/.test(m))).toHaveLength(1);
      expect(out.messages.join('\n')).toContain('writer-thread.js');
    } finally {
      rmSync(bundle, { recursive: true, force: true });
    }
  });
});

describe('5 and 7. large bodies and storage that is down stay within bounds', () => {
  it('a body a parser made huge crosses to the writer cut to about bodyLimit', async () => {
    const { url, profiler, database } = await serve((app) => {
      app.use(express.json({ limit: '20mb' }));
      app.post('/big', (req, res) => res.json({ keys: Object.keys(req.body as object).length }));
    }, { bodyLimit: 4096 });
    const body = Object.fromEntries(Array.from({ length: 50_000 }, (_, i) => [`k${i}`, 'v'.repeat(20)]));
    expect(await (await fetch(`${url}/big`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json()).toEqual({ keys: 50_000 });
    profiler.flush();
    const stored = readRows(database)[0].collectors.request.body;
    expect(stored).toMatchObject({ kind: 'json', truncated: true });
    expect(JSON.stringify(stored.json).length).toBeLessThan(4096 + 64);
  });

  it('with storage down, waiting profiles are bounded in bytes, drops are told, and requests and pages answer', async () => {
    const database = tempDir();
    const megabyte = JSON.stringify({ blob: 'z'.repeat(1024 * 1024) });
    const { url, profiler, errors } = await serve((app) => {
      app.get('/mb', (_req, res) => res.type('json').send(megabyte));
    }, { database, bodyLimit: 2 * 1024 * 1024 });
    // The store never opens in this test: a request or a page that waited for it would never
    // answer (the test's own timeout is the ceiling), so each answer is the proof.
    for (let i = 0; i < 90; i++) {
      const res = await fetch(`${url}/mb`);
      expect((await res.text()).length).toBe(megabyte.length);
    }
    expect((await fetch(`${url}/_profiler/`)).status).toBe(503);
    profiler.flush();
    expect(errors.join('\n')).toMatch(/cannot open profiler storage/);
    expect(errors.join('\n')).toMatch(/behind|dropped/);
  });
});

describe('6. bodies bare Express survives are survived', () => {
  it('res.write(123) and res.end(123): a 500, as bare, and the process goes on', async () => {
    const { url, profiler, database } = await serve((app) => {
      app.get('/write', (_req, res) => {
        res.write(123 as never);
        res.end();
      });
      app.get('/end', (_req, res) => res.end(123 as never));
      app.get('/ok', (_req, res) => res.send('alive'));
    });
    expect((await fetch(`${url}/write`)).status).toBe(500);
    expect((await fetch(`${url}/end`)).status).toBe(500);
    await new Promise((r) => setTimeout(r, 50));
    expect(await (await fetch(`${url}/ok`)).text()).toBe('alive');
    profiler.flush();
    expect(readRows(database).map((r) => r.status)).toEqual([500, 500, 200]);
  });

  it('a Uint8Array body is stored as the bytes it is, and redacted', async () => {
    const { url, profiler, database } = await serve((app) => {
      app.get('/bytes', (_req, res) => {
        res.setHeader('Content-Type', 'application/json');
        res.end(new TextEncoder().encode('{"user":"ada","password":"hunter2"}'));
      });
    });
    expect(await (await fetch(`${url}/bytes`)).json()).toEqual({ user: 'ada', password: 'hunter2' });
    profiler.flush();
    const body = readRows(database)[0].collectors.response.body;
    expect(body).toMatchObject({ kind: 'json', json: { user: 'ada', password: '[redacted]' }, size: 35 });
  });
});

describe('flush() stores every request answered so far', () => {
  it('a response ended a moment ago is stored, whole and not aborted, though its close has not come', async () => {
    let stored = -1;
    const { url, database } = await serve((app, p) => {
      app.get('/now', (_req, res) => {
        res.send('answered');
        // Before Node has even written it: the app has said all it will say.
        stored = p.flush();
      });
    });
    expect(await (await fetch(`${url}/now`)).text()).toBe('answered');
    expect(stored).toBe(1);
    const [row] = readRows(database);
    expect(row.collectors.response).toMatchObject({ status: 200, aborted: false, body: { text: 'answered' } });
  });
});

describe('8. one value that cannot be stored costs its own panel only', () => {
  it('a BigInt or a cycle in an app panel: every profile stored, the panel noted', async () => {
    const { url, profiler, database, errors } = await serve((app) => {
      app.get('/x', (_req, res) => res.send('x'));
    }, {
      collectors: [
        { id: 'big', title: 'Big', collect: () => ({ n: 10n }) },
        { id: 'cyclic', title: 'Cyclic', collect: () => { const a: Record<string, unknown> = {}; a.self = a; return a; } },
        { id: 'fine', title: 'Fine', collect: () => ({ ok: true }) },
      ],
    });
    for (let i = 0; i < 5; i++) await fetch(`${url}/x`);
    profiler.flush();
    const rows = readRows(database);
    expect(rows).toHaveLength(5);
    expect(rows[0].collectors.fine).toEqual({ ok: true });
    expect(rows[0].collectors.big).toBeUndefined();
    expect(rows[0].collectorErrors).toMatchObject({ big: expect.stringContaining('could not be stored'), cyclic: expect.stringContaining('could not be stored') });
    expect(errors).toEqual([]);
  });

  it('a function in an app panel, in the same hand-over as plain ones: every profile stored, the others as they were', async () => {
    const { url, profiler, database, errors } = await serve((app) => {
      app.get('/:name', (_req, res) => res.send('x'));
    }, {
      collectors: [
        { id: 'odd', title: 'Odd', collect: (ctx: { req: { url?: string } }) => (ctx.req.url === '/fn' ? { handler: () => 1, n: 1 } : { n: 2 }) },
        { id: 'fine', title: 'Fine', collect: () => ({ ok: true }) },
      ],
    });
    for (let i = 0; i < 6; i++) await fetch(`${url}/${i % 2 ? 'fn' : 'plain'}`);
    profiler.flush();
    const rows = readRows(database);
    expect(rows).toHaveLength(6);
    for (const row of rows) expect(row.collectors.fine).toEqual({ ok: true });
    expect(rows.filter((r) => (r.collectors.odd as { n: number }).n === 2)).toHaveLength(3);
    expect(rows.filter((r) => (r.collectors.odd as { n: number }).n === 1)).toHaveLength(3);
    expect(errors).toEqual([]);
  });
});

describe('9. redaction covers every place a secret travels', () => {
  // Made at run time, so that the code excerpts of this very file hold none of them.
  const S = (n: number) => `${['SEC', 'RET'].join('')}${String(n).padStart(2, '0')}`;

  it('none of twenty secrets reaches the stored profile or the debug page', async () => {
    const { url, profiler, database } = await serve((app, p) => {
      app.use(express.json());
      app.use(express.text());
      app.post('/login', (req, res) => {
        req.log.info(`token: ${S(7)} given`);
        console.log(req.body);
        req.log.info('deep', { a: { b: { c: { d: { e: { f: { g: { h: { i: { j: { password: S(10) } } } } } } } } } } });
        res.setHeader('Content-Location', `/login?api_key=${S(3)}`);
        res.setHeader('Link', `</next?session=${S(4)}>; rel="next"`);
        res.setHeader('Refresh', `5; url=/x?secret=${S(5)}`);
        res.redirect(`/home?password=${S(2)}`);
      });
      app.post('/raw', (req, res) => res.type('text').send(`got ${String(req.body).length}`));
      app.post('/fail', (req) => {
        throw new Error(`login failed for password=${String((req.body as { password?: string }).password)}`);
      });
      withErrorPages(app, p);
    });
    const login = await fetch(`${url}/login?p%61ssword=${S(11)}&pwd=${S(13)}&jwt=${S(14)}&signature=${S(15)}`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/json', referer: `http://elsewhere.example/?token=${S(1)}`, 'x-api-key': `live_51Hx ${S(12)}` },
      body: JSON.stringify({ user: 'ada', password: S(8), passphrase: S(16), privateKey: S(17), auth: S(18) }),
    });
    expect(login.status).toBe(302);
    await fetch(`${url}/raw`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: `${'x'.repeat(70_000)}{"passwords": ["${S(9)}", "${S(19)}"], "ok": 1}` });
    const fail = (accept: string) => fetch(`${url}/fail`, { method: 'POST', headers: { accept, 'content-type': 'application/json' }, body: JSON.stringify({ password: S(6) }) });
    const failed = await fail('application/json');
    const problem = await failed.text();
    expect(problem).toContain('login failed for password=[redacted]');
    expect(decodeURIComponent(failed.headers.get('x-debug-exception')!)).toBe('login failed for password=[redacted]');
    const page = await (await fail('text/html')).text();
    profiler.flush();
    const stored = JSON.stringify(readRows(database));
    for (const [name, text] of [['stored', stored], ['problem', problem], ['page', page]]) {
      const leaks = [...text.matchAll(/.{0,60}SECRET\d\d.{0,20}/g)].map((m) => m[0]);
      expect(leaks, name).toEqual([]);
    }
    // What is not secret stays readable.
    expect(stored).toContain('"user":"ada"');
    expect(stored).toContain('api_key=[redacted]');
  }, 30_000);

  it('text: every form of a secret field goes, paths and the rest stay', () => {
    const keys = resolveOptions({}, {}).redactKeys;
    const cases: [string, string][] = [
      ['not found at (/etc/passwd:1:1)', 'not found at (/etc/passwd:1:1)'],
      ["{ user: 'a', password: 'x y' }", '{ user: \'a\', password: "[redacted]" }'],
      ['token: abc def, ok', 'token: [redacted], ok'],
      ['{"passwords": ["a", {"b": 1}], "n": 1}', '{"passwords": "[redacted]", "n": 1}'],
      ['/login?p%61ssword=1&b=2', '/login?p%61ssword=[redacted]&b=2'],
      ['5; url=/x?secret=s', '5; url=/x?secret=[redacted]'],
      ['Authorization: Bearer xyz', 'Authorization: [redacted]'],
    ];
    for (const [text, redacted] of cases) expect(redactText(text, keys), text).toBe(redacted);
  });
});

describe('11. every error that reaches Express is in the profile, whichever handler answers', () => {
  for (const [name, lib, own] of [['Express 5', express, true], ['Express 5', express, false], ['Express 4', express4, true], ['Express 4', express4, false]] as const) {
    it(`${name}, ${own ? 'with the app\'s own error handler' : 'with none (Express\'s final handler)'}`, async () => {
      const { url, profiler, database } = await serve((app) => {
        app.get('/next-first', (_req, _res, next) => next(new Error('passed on first')));
        app.get('/thrown', () => {
          throw new Error('thrown in a handler');
        });
        // Express 4 leaves a rejected promise to the app: it is no error that reaches Express there.
        app.get('/rejected', lib === express ? async () => {
          await new Promise((r) => setTimeout(r, 2));
          throw new Error('rejected in a handler');
        } : (_req, _res, next) => Promise.reject(new Error('rejected in a handler')).catch(next));
        app.get('/next-later', (_req, _res, next) => setTimeout(() => next(new Error('passed on later')), 2));
        app.use('/sub', lib.Router().get('/x', (_req, _res, next) => next(new Error('from a router'))));
        if (own) app.use((err: Error, _req: Request, res: Response, _next: NextFunction) => res.status(500).send(`sorry: ${err.message}`));
      }, {}, lib);
      // The failing request is the app's first: its end must be seen too.
      for (const p of ['/next-first', '/thrown', '/rejected', '/next-later', '/sub/x']) expect((await fetch(url + p)).status).toBe(500);
      profiler.flush();
      expect(readRows(database).map((r) => r.collectors.exception?.chain[0].message)).toEqual(
        ['passed on first', 'thrown in a handler', 'rejected in a handler', 'passed on later', 'from a router']);
    });
  }
});

describe('16. OPTIONS is the router\'s to answer', () => {
  it('200 with Allow, as bare Express, with notFound mounted', async () => {
    const { url } = await serve((app, p) => {
      app.get('/items', (_req, res) => res.send('items'));
      app.post('/items', (_req, res) => res.send('made'));
      withErrorPages(app, p);
    });
    const res = await fetch(`${url}/items`, { method: 'OPTIONS' });
    expect(res.status).toBe(200);
    expect(res.headers.get('allow')).toBe('GET, HEAD, POST');
    expect((await fetch(`${url}/nothing`, { method: 'OPTIONS', headers: { accept: 'text/plain' } })).status).toBe(404);
  });
});

describe('17. what the panels show is what happened', () => {
  it('a route that passed on is not named; a route that answered is, with its params', async () => {
    const { url, profiler, database } = await serve((app, p) => {
      app.get('/maybe/:id', (_req, _res, next) => next());
      app.get('/users/:id', (req, res) => res.send(`user ${req.params.id}`));
      withErrorPages(app, p);
    });
    await fetch(`${url}/maybe/7`, { headers: { accept: 'text/plain' } });
    await fetch(`${url}/users/8`);
    profiler.flush();
    const [passed, answered] = readRows(database).map((r) => r.collectors.routing);
    expect(passed.route).toBeUndefined();
    expect(answered).toMatchObject({ route: '/users/:id', params: { id: '8' } });
  });

  it('headers named constructor and keys named __proto__ are shown as they came', async () => {
    const { url, profiler, database } = await serve((app) => {
      app.use(express.json());
      app.post('/odd', (_req, res) => res.setHeader('constructor', 'built').setHeader('__proto__', 'fromApp').json({ ok: true }));
    });
    // fetch drops a header named __proto__; Node's client sends what it is given.
    await new Promise((resolve, reject) => {
      const target = new URL(`${url}/odd?__proto__=fromQuery`);
      httpRequest({ host: target.hostname, port: target.port, method: 'POST', path: target.pathname + target.search,
        headers: { 'content-type': 'application/json', cookie: '__proto__=fromCookie; constructor=c', ['__proto__']: 'fromHeader', constructor: 'sent' } }, (res) => res.resume().on('end', resolve))
        .on('error', reject)
        .end('{"__proto__": {"polluted": true}, "constructor": "fromBody"}');
    });
    profiler.flush();
    const { request, response } = readRows(database)[0].collectors;
    expect(response.headers.constructor).toBe('built');
    expect(Object.getOwnPropertyDescriptor(response.headers, '__proto__')?.value).toBe('fromApp');
    expect(request.headers.constructor).toBe('sent');
    expect(Object.getOwnPropertyDescriptor(request.cookies, 'constructor')?.value).toBe('[redacted]');
    expect(Object.getOwnPropertyDescriptor(request.query, '__proto__')?.value).toBe('fromQuery');
    expect(Object.getOwnPropertyDescriptor(request.cookies, '__proto__')?.value).toBe('[redacted]');
    expect(Object.getOwnPropertyDescriptor(request.headers, '__proto__')?.value).toBe('fromHeader');
    expect(Object.getOwnPropertyDescriptor(request.body.json, '__proto__')?.value).toEqual({ polluted: true });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('a body that shares or loops back on itself costs no more than its size', async () => {
    const { url, profiler, database } = await serve((app) => {
      app.post('/shared', (req, res) => {
        let node: unknown = { leaf: 'x' };
        for (let i = 0; i < 40; i++) node = { left: node, right: node };
        const loop: Record<string, unknown> = {};
        loop.self = loop;
        loop.node = node;
        req.body = loop;
        res.send('ok');
      });
    });
    const started = performance.now();
    await fetch(`${url}/shared`, { method: 'POST' });
    profiler.flush();
    expect(performance.now() - started).toBeLessThan(5000);
    const body = readRows(database)[0].collectors.request.body;
    expect(body).toMatchObject({ kind: 'json', truncated: true });
    expect(body.json.self).toBe('[circular]');
  });
});

describe('18. the small things', () => {
  it('a message with a lone surrogate, or cut inside a pair, still gets its debug page', async () => {
    const { url } = await serve((app, p) => {
      app.get('/lone', () => {
        throw new Error('bad \uD800 text');
      });
      app.get('/cut', () => {
        throw new Error(`${'a'.repeat(1999)}😀 and more`);
      });
      withErrorPages(app, p);
    });
    for (const route of ['/lone', '/cut']) {
      const res = await fetch(url + route, { headers: { accept: 'text/html' } });
      expect(res.status).toBe(500);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(res.headers.get('x-debug-exception')).toBeTruthy();
      expect(await res.text()).toContain('Error');
    }
  });

  it('the toolbar fragment and the JSON twins say nosniff; the fragment has a policy of its own', async () => {
    const { url, profiler } = await serve((app) => {
      app.get('/x', (_req, res) => res.send('x'));
    });
    const token = (await fetch(`${url}/x`)).headers.get('x-debug-token');
    profiler.flush();
    const wdt = await fetch(`${url}/_wdt/${token}`);
    expect(wdt.status).toBe(200);
    expect(wdt.headers.get('x-content-type-options')).toBe('nosniff');
    expect(wdt.headers.get('content-security-policy')).toMatch(/default-src 'none'.*frame-ancestors 'none'/);
    for (const path of ['/_profiler/', `/_profiler/${token}`, `/_wdt/${token}`]) {
      const res = await fetch(url + path, { headers: { accept: 'application/json' } });
      expect(res.headers.get('content-type'), path).toMatch(/json/);
      expect(res.headers.get('x-content-type-options'), path).toBe('nosniff');
    }
  });

  it('the database is its owner\'s alone, and purge leaves no bytes behind', async () => {
    const { url, profiler, database } = await serve((app) => {
      app.get('/x', (_req, res) => res.send('x'));
    });
    await fetch(`${url}/x?marker=PURGE-ME-PLEASE`);
    profiler.flush();
    for (const file of [database, `${database}-wal`]) expect(statSync(file).mode & 0o077, file).toBe(0);
    const store = ProfileStore.open(database);
    expect(store.purge()).toBe(1);
    store.close();
    profiler.close();
    for (const suffix of ['', '-wal']) {
      let bytes = '';
      try {
        bytes = readFileSync(database + suffix).toString('latin1');
      } catch {
        // A WAL that is gone holds nothing.
      }
      expect(bytes).not.toContain('PURGE-ME-PLEASE');
    }
  });

  it('storage trouble is told once an episode, however the messages alternate', async () => {
    const told: string[] = [];
    const dir = tempDir();
    const queue = new WriteQueue<Profile>({ database: dir, schema: '', instance: 'test', maxProfiles: 100, maxAge: 3_600_000, flushInterval: 60_000 }, (tell) => new SqliteSink(dir, new TokenBitmap(), { cell: new Int32Array(1).fill(-1), owner: 'test' }, tell, tell), serialise, (m) => told.push(m));
    const profile = (i: number): Profile => ({ token: i.toString(16).padStart(6, '0'), parent: null, ip: '::1', method: 'GET', url: '/', status: 200, time: i, duration: 1, type: 'request', collectors: {} });
    for (let round = 0; round < 3; round++) {
      queue.push(Array.from({ length: 20_010 }, (_, i) => profile(round * 100_000 + i)));
      await queue.flush();
    }
    await queue.close();
    expect(told.filter((m) => m.includes('cannot open'))).toHaveLength(1);
    expect(told.filter((m) => m.includes('dropped'))).toHaveLength(1);
  });
});

describe('19. the demo', () => {
  it('is strict about trailing slashes, and caps what refused sign-ins store', async () => {
    const dir = tempDir();
    const demo = await createDemoApp(configFrom({ APP_ENV: 'dev', STORAGE_DIR: path.join(dir, 'storage') }), { seed: { username: 'dev', password: 'correct horse' } });
    const server = await listen(demo.app);
    try {
      expect((await fetch(`${server.url}/pub/status/db`, { method: 'HEAD' })).status).toBe(200);
      expect((await fetch(`${server.url}/pub/status/db/`, { method: 'HEAD', redirect: 'manual' })).status).toBe(301);
      expect((await fetch(`${server.url}/pub/status/db/`, { headers: { accept: 'text/plain' }, redirect: 'manual' })).headers.get('location')).toBe('/pub/status/db');
      const huge = 'u'.repeat(100_000);
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${server.url}/api/authenticate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: `${i}${huge}`, password: 'nope' }) });
        expect(res.status).toBe(401);
      }
      const [group] = demo.db.refusalsByAddress(0);
      expect(group.attempts).toBe(3);
      expect(group.usernames.length).toBeLessThan(300);
    } finally {
      await server.close();
      demo.close();
    }
  });
});
