import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webProfiler, type ProfilerOptions } from '../src/index.js';
import { listen, tempDb, type Running } from './helpers.js';

class PaymentError extends Error {
  status = 402;
}

function buildApp(options: ProfilerOptions) {
  const profiler = webProfiler({ database: tempDb(), onError: () => {}, ...options });
  const app = express();
  // Without strict routing Express already treats /docs and /docs/ alike; the 301 is for apps that tell them apart.
  app.set('strict routing', true);
  app.use(profiler);
  app.get('/docs/', (_req, res) => res.send('docs'));
  app.get('/about', (_req, res) => res.send('about'));
  app.post('/about', (_req, res) => res.send('posted'));
  app.get('/items', (_req, res) => res.send('items'));
  app.get('/maybe', (_req, _res, next) => next());
  app.get('/throws', (req) => {
    req.log.info('about to throw');
    req.log.warn('it will go badly', { attempt: 3 });
    throw new Error('Thrown in a handler');
  });
  app.get('/rejects', async () => {
    await new Promise((r) => setTimeout(r, 1));
    throw new PaymentError('Payment required for <b>this</b>');
  });
  app.get('/chain', () => {
    const root = new Error('disk quota exceeded');
    const middle = new Error('could not write cache', { cause: root });
    throw new Error('could not render the page', { cause: middle });
  });
  app.get('/aggregate', () => {
    throw new AggregateError([new Error('replica 1 timed out'), new TypeError('replica 2 sent garbage')], 'all replicas failed');
  });
  app.get('/late', (_req, res) => {
    res.write('partial');
    throw new Error('after the headers');
  });
  app.use(profiler.notFound);
  app.use(profiler.errorHandler);
  return { app, profiler };
}

let dev: Running & { profiler: ReturnType<typeof webProfiler> };
let prod: Running;

beforeAll(async () => {
  const d = buildApp({ debug: true });
  dev = Object.assign(await listen(d.app), { profiler: d.profiler });
  prod = await listen(buildApp({ debug: false, enabled: false }).app);
});
afterAll(async () => {
  await dev.close();
  await prod.close();
});

const text = { accept: '*/*' };
const html = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };
const json = { accept: 'application/json' };

describe('not found', () => {
  it('says "No route found" with scheme, host, port and path, without the query', async () => {
    const res = await fetch(`${dev.url}/robots.txt?x=1`, { headers: text });
    expect(res.status).toBe(404);
    const body = await res.text();
    expect(body).toContain(`No route found for "GET ${dev.url}/robots.txt"`);
    expect(body).not.toContain('x=1"');
    expect(res.headers.get('x-robots-tag')).toBe('noindex');
  });

  it('adds the Referer', async () => {
    const res = await fetch(`${dev.url}/missing`, { headers: { ...json, referer: `${dev.url}/from-here` } });
    const problem = await res.json();
    expect(problem.detail).toBe(`No route found for "GET ${dev.url}/missing" (from "${dev.url}/from-here")`);
    expect(problem).toMatchObject({ status: 404, title: 'Not Found', class: 'NotFoundError' });
  });

  it('redirects to the path with its trailing slash toggled, keeping the query (GET and HEAD)', async () => {
    for (const method of ['GET', 'HEAD']) {
      const res = await fetch(`${dev.url}/docs?page=2`, { method, redirect: 'manual' });
      expect(res.status).toBe(301);
      expect(res.headers.get('location')).toBe('/docs/?page=2');
    }
    const back = await fetch(`${dev.url}/items/`, { redirect: 'manual' });
    expect(back.status).toBe(301);
    expect(back.headers.get('location')).toBe('/items');
  });

  it('does not redirect other methods, nor off-host', async () => {
    expect((await fetch(`${dev.url}/docs`, { method: 'POST', redirect: 'manual', headers: text })).status).toBe(404);
    const res = await fetch(`${dev.url}//evil.example`, { redirect: 'manual', headers: text });
    expect(res.status).toBe(404);
    expect(res.headers.get('location')).toBeNull();
  });

  it('turns GET /_profiler into a 301 to /_profiler/', async () => {
    const res = await fetch(`${dev.url}/_profiler?limit=10`, { redirect: 'manual' });
    expect(res.status).toBe(301);
    expect(res.headers.get('location')).toBe('/_profiler/?limit=10');
  });

  it('answers 404, not 405, when the route for this method passed on', async () => {
    const res = await fetch(`${dev.url}/maybe`, { headers: text });
    expect(res.status).toBe(404);
    expect(res.headers.get('allow')).toBeNull();
  });

  it('answers 404, as bare Express does, for a path that exists for other methods, and names them', async () => {
    const res = await fetch(`${dev.url}/items`, { method: 'DELETE', headers: text });
    expect(res.status).toBe(404);
    expect(res.headers.get('allow')).toBeNull();
    expect(await res.text()).toContain(`No route found for "DELETE ${dev.url}/items": the path answers GET, HEAD`);
  });

  it('with methodNotAllowed, answers 405 with Allow, also through the app\'s own error handler', async () => {
    const built = buildApp({ methodNotAllowed: true });
    const own = express();
    own.use(built.profiler);
    own.get('/items', (_req, res) => res.send('items'));
    own.use(built.profiler.notFound);
    own.use((err: { status: number }, _req: express.Request, res: express.Response, _next: express.NextFunction) => res.status(err.status).json({ error: err.status }));
    const [debug, apps] = await Promise.all([listen(built.app), listen(own)]);
    try {
      const res = await fetch(`${debug.url}/items`, { method: 'DELETE', headers: text });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('GET, HEAD');
      expect(await res.text()).toContain(`No route found for "DELETE ${debug.url}/items": Method Not Allowed (Allow: GET, HEAD)`);
      const answered = await fetch(`${apps.url}/items`, { method: 'DELETE', headers: { accept: 'application/json' } });
      expect([answered.status, answered.headers.get('allow'), await answered.json()]).toEqual([405, 'GET, HEAD', { error: 405 }]);
    } finally {
      await Promise.all([debug.close(), apps.close()]);
    }
  });
});

describe('exception page', () => {
  it('renders a thrown error as HTML with trace, code excerpt, log and a link to the profile', async () => {
    const res = await fetch(`${dev.url}/throws`, { headers: html });
    expect(res.status).toBe(500);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const token = res.headers.get('x-debug-token');
    const page = await res.text();
    expect(page).toContain('Thrown in a handler');
    expect(page).toContain('error-pages.test.ts');
    expect(page).toContain(`throw new Error(&#39;Thrown in a handler&#39;);`);
    expect(page).toContain('class="selected"');
    expect(page).toContain('about to throw');
    expect(page).toContain('<span class="v-key">attempt</span>: <span class="v-num">3</span>');
    expect(page).toContain(`/_profiler/${token}?panel=exception&amp;type=request`);
    expect(res.headers.get('x-debug-exception')).toBe('Thrown%20in%20a%20handler');
    expect(res.headers.get('x-debug-exception-file')).toMatch(/error-pages\.test\.ts:\d+$/);
    // Only the page's own nonce'd script: the toolbar stays out of a page whose CSP would block it.
    const nonce = /'nonce-([^']+)'/.exec(res.headers.get('content-security-policy')!)![1];
    expect(page.match(/<script[^>]*>/g)).toEqual([`<script nonce="${nonce}">`]);
  });

  it('renders a rejected promise with its own status, escaping the message', async () => {
    const res = await fetch(`${dev.url}/rejects`, { headers: html });
    expect(res.status).toBe(402);
    const page = await res.text();
    expect(page).toContain('PaymentError');
    expect(page).toContain('Payment required for &lt;b&gt;this&lt;/b&gt;');
    expect(page).not.toContain('<b>this</b>');
  });

  it('shows the whole cause chain, in JSON and in text', async () => {
    const problem = await (await fetch(`${dev.url}/chain`, { headers: json })).json();
    expect(problem.detail).toBe('could not render the page');
    expect(problem.causes.map((c: { message: string }) => c.message)).toEqual(['could not write cache', 'disk quota exceeded']);
    expect(problem.trace[0]).toMatchObject({ file: expect.stringContaining('error-pages.test.ts'), line: expect.any(Number) });
    const report = await (await fetch(`${dev.url}/chain`, { headers: text })).text();
    expect(report).toMatch(/^Error: could not render the page \(HTTP 500 Internal Server Error\)/);
    expect(report).toContain('Caused by: Error: could not write cache');
    expect(report).toContain('Caused by: Error: disk quota exceeded');
    expect(report).toMatch(/> +\d+ \| +throw new Error\('could not render the page'/);
  });

  it('lists the errors inside an AggregateError', async () => {
    const problem = await (await fetch(`${dev.url}/aggregate`, { headers: json })).json();
    expect(problem).toMatchObject({ class: 'AggregateError', detail: 'all replicas failed' });
    expect(problem.causes).toEqual([{ class: 'Error', message: 'replica 1 timed out' }, { class: 'TypeError', message: 'replica 2 sent garbage' }]);
    const page = await (await fetch(`${dev.url}/aggregate`, { headers: html })).text();
    expect(page).toContain('Exceptions (3)');
    expect(page).toContain('replica 2 sent garbage');
  });

  it('the profile shows the same exception', async () => {
    const res = await fetch(`${dev.url}/chain`, { headers: text });
    const token = res.headers.get('x-debug-token');
    dev.profiler.flush();
    const data = await (await fetch(`${dev.url}/_profiler/${token}?panel=exception&type=request`, { headers: json })).json();
    expect(data.data.chain.map((e: { message: string }) => e.message)).toEqual(['could not render the page', 'could not write cache', 'disk quota exceeded']);
    const page = await (await fetch(`${dev.url}/_profiler/${token}?panel=exception&type=request`)).text();
    expect(page).toContain('could not render the page');
    expect(page).toContain('disk quota exceeded');
  });

  it('hands an error after the headers to Express, which closes the response', async () => {
    const res = await fetch(`${dev.url}/late`);
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
  });
});

describe('production', () => {
  it('says only the status and its phrase: no message, path or token', async () => {
    for (const [path, status, phrase] of [['/throws', 500, 'Internal Server Error'], ['/robots.txt', 404, 'Not Found'], ['/rejects', 402, 'Payment Required']] as const) {
      for (const headers of [html, json, text]) {
        const res = await fetch(prod.url + path, { headers });
        expect(res.status).toBe(status);
        const body = await res.text();
        expect(body).toContain(phrase);
        for (const leak of ['Thrown in a handler', 'No route found', 'Payment required for', 'error-pages.test', '/work/', 'at ']) {
          expect(body).not.toContain(leak);
        }
        expect(res.headers.get('x-debug-token')).toBeNull();
        expect(res.headers.get('x-debug-exception')).toBeNull();
        expect(res.headers.get('x-robots-tag')).toBeNull();
      }
    }
  });

  it('has no profiler: /_profiler is a plain 404', async () => {
    const res = await fetch(`${prod.url}/_profiler/`, { headers: html });
    expect(res.status).toBe(404);
    expect(await res.text()).not.toContain('Profiler');
  });
});

describe('debug pages without the profiler', () => {
  it('show the exception but no links to a profiler that is not there', async () => {
    const { app } = buildApp({ debug: true, enabled: false });
    const server = await listen(app);
    try {
      const res = await fetch(`${server.url}/throws`, { headers: html });
      expect(res.status).toBe(500);
      const page = await res.text();
      expect(page).toContain('Thrown in a handler');
      expect(page).not.toContain('href="/_profiler/');
      expect(res.headers.get('x-debug-token')).toBeNull();
      expect(res.headers.get('x-robots-tag')).toBe('noindex');
    } finally {
      await server.close();
    }
  });
});

describe('who sees the debug pages: those who may read the profiler', () => {
  // Staging as the README sets it up: debug pages on, a key, no trusted loopback.
  let app: Running;
  let token: string | null = null;
  const KEY = 'staging-key-0123456789';
  beforeAll(async () => {
    const built = buildApp({ debug: true, secret: KEY, trustLocal: false });
    app = await listen(built.app);
  });
  afterAll(async () => {
    await app?.close();
  });

  const ask = async (path: string, accept: string, key?: string) => {
    const res = await fetch(`${app.url}${path}`, { headers: { accept, ...(key ? { 'x-profiler-secret': key } : {}) } });
    token = res.headers.get('x-debug-token');
    return { status: res.status, headers: res.headers, body: await res.text() };
  };

  it.each([['text/html'], ['application/json'], ['text/plain']])('a stranger\'s 500 and 404 (%s) are the status and its title, and the token: no frame, code, path or log line', async (accept) => {
    for (const [path, status, title] of [['/throws', 500, 'Internal Server Error'], ['/nowhere', 404, 'Not Found']] as const) {
      const { status: got, headers, body } = await ask(path, accept);
      expect(got).toBe(status);
      expect(body).toContain(title);
      expect(body).toContain(token!);
      for (const leak of ['Thrown in a handler', 'No route found', 'error-pages.test.ts', '/work/', 'about to throw', 'it will go badly']) expect(body, `${path} ${leak}`).not.toContain(leak);
      expect(headers.get('x-debug-exception')).toBeNull();
      expect(headers.get('x-debug-exception-file')).toBeNull();
    }
  });

  it('the holder of the key gets the whole page: message, frames with code, the log', async () => {
    const page = await ask('/throws', 'text/html', KEY);
    expect(page.status).toBe(500);
    for (const shown of ['Thrown in a handler', 'error-pages.test.ts', 'about to throw', 'throw new Error']) expect(page.body).toContain(shown);
    expect(page.headers.get('x-debug-exception')).toBe('Thrown%20in%20a%20handler');
    const missing = await ask('/nowhere', 'text/plain', KEY);
    expect(missing.body).toContain('No route found for "GET http://127.0.0.1:');
  });

  it.each([['text/html'], ['application/json'], ['text/plain']])('no shared cache keeps a debug answer (%s) to serve it to another client: no-store, varying by what grants access', async (accept) => {
    for (const path of ['/throws', '/nowhere']) {
      for (const key of [KEY, undefined]) {
        const { headers } = await ask(path, accept, key);
        expect(headers.get('cache-control'), `${path} ${key ? 'key' : 'stranger'}`).toBe('no-store');
        expect(headers.get('vary')).toMatch(/Accept.*Cookie.*X-Profiler-Secret/);
      }
    }
  });
});

describe('notFound without the profiler\'s errorHandler: what is passed on says no more than bare Express', () => {
  it('Express\'s final handler (and an app handler printing err.stack) answer `Cannot GET /x`, as bare, not the profiler\'s paths nor the Referer', async () => {
    const profiler = webProfiler({ database: tempDb(), onError: () => {} });
    const make = (mounted: boolean) => {
      const app = express();
      if (mounted) app.use(profiler);
      app.get('/here', (_req, res) => res.send('here'));
      if (mounted) app.use(profiler.notFound);
      return app;
    };
    const stacked = express();
    stacked.use(profiler);
    stacked.use(profiler.notFound);
    stacked.use((err: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => res.status(404).type('text').send(err.stack));
    const [bare, mounted, own] = await Promise.all([listen(make(false)), listen(make(true)), listen(stacked)]);
    try {
      for (const accept of ['application/json', '*/*']) {
        const ask = async (base: string) => {
          const res = await fetch(`${base}/x%20y/z?q=1`, { headers: { accept, referer: 'https://ref.example.test/from' } });
          return { status: res.status, type: res.headers.get('content-type'), body: await res.text() };
        };
        const [b, m, o] = [await ask(bare.url), await ask(mounted.url), await ask(own.url)];
        expect(m, accept).toEqual(b);
        expect(b.body).toContain('Cannot GET /x%20y/z');
        expect(o.body).toBe('Cannot GET /x%20y/z');
        for (const leak of ['ref.example.test', 'node_modules', '/src/', 'NotFoundError']) expect(m.body + o.body).not.toContain(leak);
        // A wrong method on a path the app serves: bare Express's 404, not a 405 of the profiler's.
        const wrong = async (base: string) => {
          const res = await fetch(`${base}/here`, { method: 'PUT', headers: { accept } });
          return { status: res.status, allow: res.headers.get('allow'), body: await res.text() };
        };
        expect(await wrong(mounted.url), accept).toEqual(await wrong(bare.url));
      }
    } finally {
      await Promise.all([bare.close(), mounted.close(), own.close()]);
      profiler.close();
    }
  });
});
