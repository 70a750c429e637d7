// The host app answers exactly as it would bare: only the three debug headers and the toolbar differ.
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import express4 from 'express4';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Eta } from 'eta';
import hbs from 'hbs';
import { execFile } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import compression from 'compression';
import session from 'express-session';
import path from 'node:path';
import { afterAll, beforeAll, afterEach, describe, expect, it } from 'vitest';
import { webProfiler, type WebProfiler } from '../src/index.js';
import { listen, readRows, tempDb, tempDir, type Running } from './helpers.js';

interface Raw {
  status: number;
  /** Header lines in the order they came, names as sent. */
  headers: [string, string][];
  body: Buffer;
}

/** One request, read as it came off the wire: headers in order with their case, the body as bytes. */
function send(base: string, method: string, path: string, headers: Record<string, string> = {}): Promise<Raw> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const pairs: [string, string][] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) pairs.push([res.rawHeaders[i], res.rawHeaders[i + 1]]);
        resolve({ status: res.statusCode!, headers: pairs, body: Buffer.concat(chunks) });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

const DEBUG_HEADERS = new Set(['x-debug-token', 'x-debug-token-link', 'x-robots-tag']);
const TOOLBAR = /<div id="wp-wdt" data-token="[0-9a-f]+" hidden><\/div><script>[\s\S]*?<\/script>/;

/** A response less the debug headers, the toolbar, and the headers that follow the toolbar (the length and ETag of a page that has it) or the clock. */
function comparable(raw: Raw, toolbarPage = TOOLBAR.test(raw.body.toString('latin1'))) {
  const text = raw.body.toString('latin1');
  const toolbar = TOOLBAR.test(text);
  const skip = new Set([...DEBUG_HEADERS, 'date', ...(toolbarPage ? ['content-length', 'etag', 'last-modified', 'accept-ranges'] : [])]);
  return {
    status: raw.status,
    headers: raw.headers.filter(([name]) => !skip.has(name.toLowerCase())),
    body: text.replace(TOOLBAR, ''),
    toolbar,
  };
}

const dir = tempDir();
const page = path.join(dir, 'page.html');
writeFileSync(page, '<!doctype html><html><body><p>a file</p></body></html>');

/** The shapes of real code: every way an Express app answers. */
function build(lib: typeof express, profiler?: WebProfiler, withErrorHandler = false): Express {
  const app = lib();
  app.set('env', 'production');
  if (profiler) app.use(profiler);
  app.get('/html', (_req, res) => res.send('<!doctype html><html><body><h1>Hello</h1></body></html>'));
  app.get('/xhtml', (_req, res) => res.type('application/xhtml+xml').send('<html xmlns="http://www.w3.org/1999/xhtml"><body/></html>'));
  app.get('/etag-html', (_req, res) => res.set('ETag', '"app-etag"').type('html').send('<html><body>tagged</body></html>'));
  app.get('/json', (_req, res) => res.json({ hello: 'world', n: 1 }));
  app.get('/raw-array', (_req, res) => {
    res.writeHead(200, ['Set-Cookie', 'a=1', 'Set-Cookie', 'b=2', 'Content-Type', 'text/plain']);
    res.end('two cookies');
  });
  app.get('/raw-pairs', (_req, res) => {
    res.writeHead(201, 'Made', [['X-Twice', 'one'], ['X-Twice', 'two']]);
    res.end();
  });
  app.get('/stream', (_req, res) => {
    res.type('text');
    res.write('one,');
    setTimeout(() => {
      res.write(Buffer.from('two,'));
      res.end(new Uint8Array([116, 104, 114, 101, 101]));
    }, 5);
  });
  app.get('/sse', (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
    let n = 0;
    const tick = setInterval(() => {
      res.write(`id: ${n}\ndata: event ${n}\n\n`);
      if (++n === 3) {
        clearInterval(tick);
        res.end();
      }
    }, 2);
  });
  app.get('/file', (_req, res) => res.sendFile(page));
  // No callback: its 404 goes to req.next, and must not fall through to the next route.
  app.get('/missing-file', (_req, res) => res.sendFile(path.join(dir, 'missing.html')));
  app.get('/missing-file', (_req, res) => res.send('fell through'));
  app.get('/binary', (_req, res) => res.type('application/octet-stream').send(Buffer.from([0, 1, 2, 255, 254])));
  app.get('/bytes', (_req, res) => res.end(new TextEncoder().encode('encoded bytes')));
  app.get('/redirect', (_req, res) => res.redirect('/html'));
  app.get('/next-error', (_req, _res, next) => next(Object.assign(new Error('teapot'), { status: 418 })));
  app.get('/throws', () => {
    throw new Error('thrown');
  });
  if (lib === express) {
    app.get('/rejects', async () => {
      throw Object.assign(new Error('rejected'), { statusCode: 503 });
    });
  }
  app.post('/items', (_req, res) => res.status(201).json({ made: true }));
  if (withErrorHandler) {
    app.use((err: Error, _req: Request, res: Response, _next: NextFunction) => {
      res.status(500).type('text').send(`handled: ${err.message}`);
    });
  }
  return app;
}

const requests: [string, string, Record<string, string>?][] = [
  ['GET', '/html'], ['HEAD', '/html'], ['GET', '/xhtml'], ['GET', '/etag-html'], ['HEAD', '/etag-html'], ['GET', '/json'], ['HEAD', '/json'],
  ['GET', '/raw-array'], ['GET', '/raw-pairs'], ['GET', '/stream'], ['GET', '/sse'], ['GET', '/file'], ['HEAD', '/file'],
  ['GET', '/binary'], ['GET', '/bytes'], ['GET', '/redirect'], ['GET', '/next-error'], ['GET', '/throws'], ['GET', '/rejects'],
  ['GET', '/nowhere'], ['OPTIONS', '/items'], ['POST', '/json'], ['GET', '/missing-file'], ['GET', '/missing-file'],
];

const running: Running[] = [];
afterAll(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
});

describe.each([['Express 5', express], ['Express 4', express4 as unknown as typeof express]] as const)('%s: bare and recorded answer alike', (_name, lib) => {
  it.each([false, true])('byte for byte, apart from the debug headers and the toolbar (own error handler: %s)', async (withErrorHandler) => {
    const database = tempDb();
    const profiler = webProfiler({ database, onError: () => {} });
    const bare = await listen(build(lib, undefined, withErrorHandler));
    const recorded = await listen(build(lib, profiler, withErrorHandler));
    running.push(bare, recorded);
    for (const [method, path, headers] of requests) {
      const withIt = await send(recorded.url, method, path, headers);
      const page = method !== 'OPTIONS' && (path === '/html' || path === '/etag-html' || (method === 'GET' && path === '/file'));
      const a = comparable(await send(bare.url, method, path, headers), page);
      const b = comparable(withIt, page);
      expect(b, `${method} ${path}`).toEqual({ ...a, toolbar: b.toolbar });
      // The toolbar goes into whole HTML pages only (a sent HTML file is one), never into XHTML or anything else.
      expect(b.toolbar, `${method} ${path}`).toBe(method === 'GET' && (path === '/html' || path === '/etag-html' || path === '/file'));
    }
    // A 304 stays a 304.
    const etag = (await send(bare.url, 'GET', '/json')).headers.find(([n]) => n.toLowerCase() === 'etag')![1];
    for (const server of [bare, recorded]) expect((await send(server.url, 'GET', '/json', { 'if-none-match': etag })).status).toBe(304);
    profiler.close();
    expect(readRows(database).length).toBeGreaterThanOrEqual(requests.length);
  });
});

describe('headers', () => {
  let server: Running;
  afterEach(() => server?.close());

  it('repeated headers given to writeHead as a raw array all go out, with the debug headers', async () => {
    const profiler = webProfiler({ database: tempDb(), onError: () => {} });
    const app = build(express, profiler);
    app.disable('x-powered-by');
    server = await listen(app);
    const res = await send(server.url, 'GET', '/raw-array');
    const cookies = res.headers.filter(([n]) => n === 'Set-Cookie').map(([, v]) => v);
    expect(cookies).toEqual(['a=1', 'b=2']);
    expect(res.headers.map(([n]) => n)).toEqual(expect.arrayContaining(['X-Debug-Token', 'X-Debug-Token-Link', 'X-Robots-Tag']));
    const pairs = await send(server.url, 'GET', '/raw-pairs');
    expect(pairs.headers.filter(([n]) => n === 'X-Twice').map(([, v]) => v)).toEqual(['one', 'two']);
    expect(pairs.headers.some(([n]) => n === 'X-Debug-Token')).toBe(true);
  });

  it('a page with the toolbar drops the ETag set for the body it no longer is, and HEAD says the same length as GET', async () => {
    const profiler = webProfiler({ database: tempDb(), onError: () => {} });
    server = await listen(build(express, profiler));
    const get = await send(server.url, 'GET', '/etag-html');
    const head = await send(server.url, 'HEAD', '/etag-html');
    const header = (raw: Raw, name: string) => raw.headers.find(([n]) => n.toLowerCase() === name)?.[1];
    expect(get.body.toString()).toMatch(TOOLBAR);
    expect(header(get, 'etag')).not.toBe('"app-etag"');
    expect(Number(header(get, 'content-length'))).toBe(get.body.length);
    expect(header(head, 'content-length')).toBe(header(get, 'content-length'));
    const plain = await send(server.url, 'HEAD', '/html');
    expect(Number(header(plain, 'content-length'))).toBe((await send(server.url, 'GET', '/html')).body.length);
  });
});

describe('stack traces read as bare: every frame, in the router\'s files', () => {
  /**
   * Errors thrown under twelve middlewares that each call next() at once, in a route of the app, of
   * a Router and of a sub-app: the frames of the app and of its router, thirty deep, are those it
   * has bare. Without its own error handler, Express's final handler prints the stack (development).
   */
  function deep(lib: typeof express, profiler: WebProfiler | undefined, ownHandler: boolean) {
    const app = lib();
    app.set('env', 'development');
    if (profiler) app.use(profiler);
    for (let i = 0; i < 12; i++) app.use(function passOn(_req, _res, next) { next(); });
    function failDeep(): never {
      throw new Error('deep');
    }
    app.get('/deep', failDeep);
    const router = lib.Router();
    router.get('/deep', failDeep);
    app.use('/router', router);
    const sub = lib();
    sub.get('/deep', failDeep);
    app.use('/sub', sub);
    if (ownHandler) app.use((err: Error, _req: Request, res: Response, _next: NextFunction) => res.type('text').send(err.stack));
    return app;
  }
  const stackTraceLimit = Error.stackTraceLimit;
  beforeAll(() => {
    Error.stackTraceLimit = 30;
  });
  afterAll(() => {
    Error.stackTraceLimit = stackTraceLimit;
  });

  for (const [name, lib] of [['Express 5', express], ['Express 4', express4 as unknown as typeof express]] as const) {
    it.each([true, false])(`${name} (own error handler: %s)`, async (ownHandler) => {
      const bare = await listen(deep(lib, undefined, ownHandler));
      const recorded = await listen(deep(lib, webProfiler({ database: tempDb(), onError: () => {} }), ownHandler));
      running.push(bare, recorded);
      // A router's first request decides its hook (see hookLoadedRouters), in any app of the process: that one has a frame of the profiler's.
      for (const server of [bare, recorded]) for (const path of ['/router/deep', '/sub/deep']) await send(server.url, 'GET', path);
      for (const path of ['/deep', '/router/deep', '/sub/deep']) {
        const a = (await send(bare.url, 'GET', path)).body.toString();
        const b = (await send(recorded.url, 'GET', path)).body.toString();
        expect(a, path).toContain('failDeep');
        expect(a.split(ownHandler ? '\n' : '<br>').length, path).toBeGreaterThan(20);
        expect(b.replace(TOOLBAR, ''), path).toBe(a);
      }
    });
  }
});

describe('a tracer of the router\'s own channel (router 2.3, Express 5)', () => {
  it('sees the app\'s requests only, and the app answers as it does bare', async () => {
    // A process of its own: the layer methods are hooked once a process.
    const script = `
      const dc = require('node:diagnostics_channel');
      const seen = [];
      dc.tracingChannel('express.router.request').subscribe({ start: (m) => seen.push(m.req && m.req.url), end() {}, asyncStart() {}, asyncEnd() {}, error() {} });
      const express = require('express');
      const { webProfiler } = require(${JSON.stringify(path.resolve('dist/index.js'))});
      const app = express();
      app.use(webProfiler({ database: ':memory:', onError: () => {} }));
      app.get('/traced', (req, res) => res.send('traced'));
      const server = app.listen(0, '127.0.0.1', async () => {
        const res = await fetch('http://127.0.0.1:' + server.address().port + '/traced');
        console.log(JSON.stringify({ status: res.status, body: await res.text(), seen }));
        server.close();
        process.exit(0);
      });`;
    const { stdout } = await promisify(execFile)(process.execPath, ['-e', script], { cwd: path.resolve('.') });
    const out = JSON.parse(stdout.trim().split('\n').pop()!);
    expect(out).toMatchObject({ status: 200, body: expect.stringContaining('traced') });
    expect(out.seen.length).toBeGreaterThan(0);
    expect(out.seen.every((url: unknown) => url === '/traced')).toBe(true);
  });
});

describe('the first recorder owns a request', () => {
  it('one profiler in an app and its sub-app records each request once, with the parent\'s layers', async () => {
    const database = tempDb();
    const profiler = webProfiler({ database, onError: () => {} });
    const admin = express();
    admin.use(profiler);
    admin.get('/page', (_req, res) => res.type('text').send('admin page'));
    const app = express();
    app.use(profiler);
    app.use(function parentSlow(_req, _res, next) {
      setTimeout(next, 30);
    });
    app.use('/admin', admin);
    const server = await listen(app);
    running.push(server);
    const res = await send(server.url, 'GET', '/admin/page');
    const token = res.headers.find(([n]) => n === 'X-Debug-Token')![1];
    profiler.flush();
    const rows = readRows(database);
    expect(rows.map((r) => r.token)).toEqual([token]);
    expect(rows[0].collectors.performance.spans.map((s: { name: string }) => s.name)).toContain('parentSlow');
    expect(rows[0].duration).toBeGreaterThanOrEqual(29);
  });

  it('two profilers: the outer one records, the responses carry its headers', async () => {
    const outer = webProfiler({ database: tempDb(), onError: () => {} });
    const inner = webProfiler({ database: tempDb(), onError: () => {} });
    const admin = express();
    admin.use(inner);
    admin.get('/page', (_req, res) => res.type('text').send('admin page'));
    const app = express();
    app.use(outer);
    app.use('/admin', admin);
    const server = await listen(app);
    running.push(server);
    const res = await send(server.url, 'GET', '/admin/page');
    const token = res.headers.find(([n]) => n === 'X-Debug-Token')?.[1];
    expect(token).toMatch(/^[0-9a-f]{6}$/);
    expect(res.headers.filter(([n]) => n === 'X-Debug-Token')).toHaveLength(1);
    outer.flush();
    inner.flush();
    expect((await outer.store()!.read(token!))?.url).toMatch(/\/admin\/page$/);
    expect(await inner.store()!.find({ limit: 10 })).toEqual([]);
  });
});

/**
 * Modules of the shapes real apps have, in the require cache beside every instrumented library:
 * a config module that is a strict Proxy (envalid's and convict's throw on any name they do not
 * know), one whose exports have throwing getters, a frozen null-prototype one, and the same shapes
 * as packages of node_modules. The profiler reads none of them, and an app that renders with them
 * in its locals answers as it would bare.
 */
function loadHostileModules(): Record<string, unknown> {
  const root = tempDir();
  const strict = `module.exports = new Proxy({ PORT: 8000 }, {
    get(target, name) { if (name in target) return target[name]; throw new ReferenceError('[envalid] Env var not found: ' + String(name)); },
    has(target, name) { if (name in target) return true; throw new ReferenceError('[convict] cannot find configuration param: ' + String(name)); },
    getOwnPropertyDescriptor(target, name) { if (name in target) return Reflect.getOwnPropertyDescriptor(target, name); throw new ReferenceError('[envalid] Env var not found: ' + String(name)); },
  });\n`;
  const getters = `for (const name of ['__express', 'renderFile', 'default', 'prototype', 'then']) Object.defineProperty(exports, name, { enumerable: true, get() { throw new Error('getter ' + name + ' was read'); } });\n`;
  const frozen = 'module.exports = Object.freeze(Object.create(null));\n';
  const files: Record<string, string> = {
    'config.js': strict, 'getters.js': getters, 'frozen.js': frozen,
    'node_modules/strict-config/index.js': strict, 'node_modules/getter-pkg/index.js': getters, 'node_modules/frozen-pkg/index.js': frozen,
  };
  // An ES module namespace in the require cache, where Node requires ES modules (22.12 and later).
  if (process.features.require_module) files['esm-config.mjs'] = 'export const PORT = 8000;\nexport default new Proxy({}, { get(_t, name) { throw new ReferenceError(`[envalid] Env var not found: ${String(name)}`); } });\n';
  const load = createRequire(path.join(root, 'app.js'));
  const loaded: Record<string, unknown> = {};
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    writeFileSync(path.join(root, name), text);
    loaded[name] = load(`./${name}`);
  }
  return loaded;
}

describe('modules of any shape beside the instrumented libraries', () => {
  it('a strict Proxy config, throwing getters and frozen null-prototype modules: every engine renders as bare, and the views are recorded', async () => {
    const hostile = loadHostileModules();
    const views = path.join(import.meta.dirname, 'fixtures', 'views');
    const build = (profiler?: WebProfiler) => {
      const app = express();
      app.set('views', views);
      app.set('view engine', 'ejs');
      app.engine('hbs', hbs.__express);
      const eta = new Eta({ views });
      app.engine('eta', (file: string, options: object, done: (err: unknown, html?: string) => void) => done(null, eta.render(path.basename(file), options)));
      if (profiler) app.use(profiler);
      // The config in the locals too, as apps pass it to their layouts.
      app.get('/page/:file', (req, res) => res.render(req.params.file, { user: 'Ada', config: hostile['config.js'], pkg: hostile['node_modules/strict-config/index.js'], frozen: hostile['frozen.js'] }));
      if (profiler) {
        app.use(profiler.notFound);
        app.use(profiler.errorHandler);
      }
      return app;
    };
    const database = tempDb();
    const profiler = webProfiler({ database, onError: () => {} });
    const bare = await listen(build());
    const recorded = await listen(build(profiler));
    running.push(bare, recorded);
    const pages = ['home', 'home.pug', 'home.hbs', 'home.eta'];
    for (const file of pages) {
      const a = comparable(await send(bare.url, 'GET', `/page/${file}`), true);
      const b = comparable(await send(recorded.url, 'GET', `/page/${file}`), true);
      expect(a.status, file).toBe(200);
      expect(b, file).toEqual({ ...a, toolbar: true });
    }
    profiler.flush();
    const engines = readRows(database).map((row) => row.collectors.views?.renders?.[0]?.engine ?? row.collectors.views?.[0]?.engine);
    expect(engines).toEqual(['ejs', 'pug', 'hbs', 'eta']);
    profiler.close();
  });
});

describe('the toolbar in HTML files: res.sendFile and express.static', () => {
  it('goes into a sent file and a static index.html at the length that has; a 304, a range and a HEAD are as bare', async () => {
    const root = tempDir();
    writeFileSync(path.join(root, 'index.html'), '<!doctype html><html><head><title>SPA</title></head><body><div id="app"></div></body></html>');
    const profiler = webProfiler({ database: tempDb(), onError: () => {} });
    const make = (withIt: boolean) => {
      const app = express();
      if (withIt) app.use(profiler);
      app.get('/page', (_req, res) => res.sendFile(path.join(root, 'index.html')));
      app.use(express.static(root));
      return app;
    };
    const [bare, recorded] = await Promise.all([listen(make(false)), listen(make(true))]);
    running.push(bare, recorded);
    for (const at of ['/', '/page']) {
      const b = await send(bare.url, 'GET', at);
      const r = await send(recorded.url, 'GET', at);
      expect(r.status).toBe(200);
      expect(comparable(r, true)).toEqual({ ...comparable(b, true), toolbar: true });
      const length = r.headers.find(([name]) => name.toLowerCase() === 'content-length')?.[1];
      expect(Number(length)).toBe(r.body.length);
      // The page as sent is not the file: no validator or range is offered for it (the file has all three).
      for (const name of ['etag', 'last-modified', 'accept-ranges']) {
        expect(b.headers.some(([n]) => n.toLowerCase() === name), `bare ${name}`).toBe(true);
        expect(r.headers.some(([n]) => n.toLowerCase() === name), name).toBe(false);
      }
      // Conditional and partial answers, and HEAD, are the file's own, untouched.
      const modified = b.headers.find(([name]) => name.toLowerCase() === 'last-modified')![1];
      for (const [method, headers] of [['GET', { 'if-modified-since': modified }], ['GET', { range: 'bytes=0-9' }], ['HEAD', {}]] as const) {
        const plain = comparable(await send(bare.url, method, at, headers));
        const ours = comparable(await send(recorded.url, method, at, headers));
        expect(ours, `${method} ${at} ${JSON.stringify(headers)}`).toEqual(plain);
        expect(ours.toolbar).toBe(false);
      }
    }
  });

  it('goes into them behind compression(), compressed with the page, or plain where the client takes no encoding; a middleware after it that wraps res.end (express-session) too', async () => {
    const root = tempDir();
    const spa = `<!doctype html><html><head><title>SPA</title></head><body><div id="app"></div>${'<p>filler</p>'.repeat(200)}</body></html>`;
    writeFileSync(path.join(root, 'index.html'), spa);
    const profiler = webProfiler({ database: tempDb(), onError: () => {} });
    const make = (withIt: boolean) => {
      const app = express();
      if (withIt) app.use(profiler);
      app.use(compression());
      // Wraps res.end after compression() did, as express-session does.
      app.use(session({ secret: 'transparency', resave: false, saveUninitialized: false }));
      app.get('/page', (_req, res) => res.sendFile(path.join(root, 'index.html')));
      app.use(express.static(root));
      return app;
    };
    const [bare, recorded] = await Promise.all([listen(make(false)), listen(make(true))]);
    running.push(bare, recorded);
    const header = (raw: Raw, name: string) => raw.headers.find(([n]) => n.toLowerCase() === name)?.[1];
    for (const at of ['/', '/page']) {
      const b = await send(bare.url, 'GET', at, { 'accept-encoding': 'gzip' });
      const r = await send(recorded.url, 'GET', at, { 'accept-encoding': 'gzip' });
      expect(header(b, 'content-encoding')).toBe('gzip');
      expect(header(r, 'content-encoding')).toBe('gzip');
      expect(header(r, 'vary')).toBe(header(b, 'vary'));
      expect(header(r, 'etag')).toBeUndefined();
      const page = gunzipSync(r.body).toString('latin1');
      expect(TOOLBAR.test(page), at).toBe(true);
      expect(page.replace(TOOLBAR, '')).toBe(gunzipSync(b.body).toString('latin1'));
      // A client that takes no encoding gets the page plain, at the length it has.
      const plain = await send(recorded.url, 'GET', at);
      expect(header(plain, 'content-encoding')).toBeUndefined();
      expect(TOOLBAR.test(plain.body.toString('latin1'))).toBe(true);
      expect(Number(header(plain, 'content-length'))).toBe(plain.body.length);
    }
  });
});
