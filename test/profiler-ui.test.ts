import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webProfiler } from '../src/index.js';
import { scriptFor } from '../src/web/toolbar.js';
import { listen, tempDb, type Running } from './helpers.js';

let app: Running;
const tokens: Record<string, string> = {};

beforeAll(async () => {
  const profiler = webProfiler({ database: tempDb(), onError: () => {} });
  const e = express();
  e.set('query parser', (q: string) => Object.fromEntries(new URLSearchParams(q)));
  e.use(profiler);
  e.use(express.json());
  e.get('/page', (req, res) => {
    req.log.info('rendering page');
    res.type('html').send('<!doctype html><html><body><h1>Page</h1></body></html>');
  });
  e.get('/plain', (_req, res) => res.type('text').send('no body tag </body> here'));
  e.get('/download', (_req, res) => res.attachment('a.html').type('html').send('<html><body>file</body></html>'));
  e.get('/go', (_req, res) => res.redirect('/page'));
  e.post('/api/orders/:id', (req, res) => res.status(201).json({ id: req.params.id }));
  e.get('/boom', () => {
    throw new Error('boom for the profiler');
  });
  e.use(profiler.notFound);
  e.use(profiler.errorHandler);
  app = await listen(e);
  const hit = async (name: string, path: string, init?: RequestInit) => {
    tokens[name] = (await fetch(app.url + path, init)).headers.get('x-debug-token')!;
  };
  await hit('page', '/page');
  await hit('order', '/api/orders/7?coupon=x', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"qty":2}' });
  await hit('boom', '/boom', { headers: { accept: 'text/plain' } });
  await hit('missing', '/robots.txt', { headers: { accept: 'text/plain' } });
  // Pages show what is stored, never waiting for the writer.
  profiler.flush();
});
afterAll(() => app.close());

const get = (path: string, init?: RequestInit) => fetch(app.url + path, { redirect: 'manual', ...init });
const json = { headers: { accept: 'application/json' } };

describe('list and search', () => {
  it('lists the latest profiles, newest first, linking each', async () => {
    const res = await get('/_profiler/');
    expect(res.status).toBe(200);
    expect(res.headers.get('x-debug-token')).toBeNull();
    const page = await res.text();
    const order = ['missing', 'boom', 'order', 'page'].map((n) => page.indexOf(`href="/_profiler/${tokens[n]}"`));
    expect(order.every((i) => i > 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(page).toContain(`${app.url}/api/orders/7?coupon=x`);
    expect(page).toMatch(/class="badge s-server" title="Internal Server Error">500</);
  });

  it('has a JSON twin', async () => {
    const body = await (await get('/_profiler/', json)).json();
    expect(body.profiles.map((p: { token: string }) => p.token)).toEqual(['missing', 'boom', 'order', 'page'].map((n) => tokens[n]));
    expect(body.profiles[2]).toMatchObject({ method: 'POST', status: 201, ip: '127.0.0.1', type: 'request' });
  });

  it('filters by method, status and URL substring, keeping the filters in the form', async () => {
    const byMethod = await (await get('/_profiler/search?method=post', json)).json();
    expect(byMethod.profiles.map((p: { token: string }) => p.token)).toEqual([tokens.order]);
    const byStatus = await (await get('/_profiler/search?status_code=404', json)).json();
    expect(byStatus.profiles.map((p: { token: string }) => p.token)).toEqual([tokens.missing]);
    const byUrl = await (await get('/_profiler/search?url=%2Fapi%2F', json)).json();
    expect(byUrl.profiles.map((p: { token: string }) => p.token)).toEqual([tokens.order]);
    const none = await (await get('/_profiler/search?url=%25_', json)).json();
    expect(none.profiles).toEqual([]);
    const page = await (await get('/_profiler/search?url=orders&method=POST&limit=10')).text();
    expect(page).toContain('name="url" value="orders"');
    expect(page).toContain('<option selected>POST</option>');
  });

  it('pages through older results', async () => {
    const first = await (await get('/_profiler/search?limit=10', json)).json();
    expect(first.next).toBeNull();
    const older = await (await get(`/_profiler/search?before=${tokens.boom}`, json)).json();
    expect(older.profiles.map((p: { token: string }) => p.token)).toEqual([tokens.order, tokens.page]);
  });

  it('filters by time', async () => {
    const future = await (await get(`/_profiler/search?start=${Date.now() + 60_000}`, json)).json();
    expect(future.profiles).toEqual([]);
    const past = await (await get('/_profiler/search?start=2020-01-01T00:00', json)).json();
    expect(past.profiles.length).toBe(4);
  });

  it('rejects filters that cannot mean anything with 400, naming them', async () => {
    for (const [query, field] of [['limit=7', 'limit'], ['limit=-1', 'limit'], ['limit=100000', 'limit'], ['status_code=abc', 'status_code'], ['method=BREW', 'method'], ['start=yesterday-ish', 'start'], ['before=../etc', 'before']]) {
      const res = await get(`/_profiler/search?${query}`);
      expect(res.status, query).toBe(400);
      expect(await res.text()).toContain(`${field}:`);
    }
  });

  it('a token typed in the search box opens that profile', async () => {
    const res = await get(`/_profiler/search?token=${tokens.page.toUpperCase()}`);
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe(`/_profiler/${tokens.page}`);
  });
});

describe('one profile', () => {
  it('opens the exception panel of a failed request by default, else the request panel', async () => {
    const failed = await (await get(`/_profiler/${tokens.boom}`)).text();
    expect(failed).toContain('boom for the profiler');
    expect(failed).toMatch(/aria-current="page">\s*<span>Exception<\/span>/);
    const ok = await (await get(`/_profiler/${tokens.order}`)).text();
    expect(ok).toMatch(/aria-current="page">\s*<span>Request<\/span>/);
  });

  it('renders every panel', async () => {
    const expectations: Record<string, string[]> = {
      request: ['coupon', '&quot;qty&quot;: 2', 'content-type'],
      response: ['201', 'application/json'],
      exception: ['No exception was thrown during this request.'],
      logs: ['This request logged nothing.'],
      performance: ['<svg class="timeline"', 'route POST /api/orders/:id', 'Time to first byte'],
      routing: ['/api/orders/:id', 'Matches: this route answered', 'Path does not match'],
      // The app: its package, its Express settings (the query parser among them, a function given by name).
      config: [process.version, 'Debug mode', 'express-web-profiler 0.', 'Express settings', 'x-powered-by', 'query parser'],
    };
    for (const [panel, needles] of Object.entries(expectations)) {
      const res = await get(`/_profiler/${tokens.order}?panel=${panel}&type=request`);
      expect(res.status, panel).toBe(200);
      const page = await res.text();
      for (const needle of needles) expect(page, `${panel}: ${needle}`).toContain(needle);
    }
  });

  it('shows the route table with why routes did not match', async () => {
    const page = await (await get(`/_profiler/${tokens.missing}?panel=routing`)).text();
    expect(page).toContain('none');
    expect(page).toContain('Path does not match');
  });

  it('has a JSON twin for the profile and for one panel', async () => {
    const profile = await (await get(`/_profiler/${tokens.order}`, json)).json();
    expect(profile).toMatchObject({ token: tokens.order, method: 'POST', status: 201 });
    expect(Object.keys(profile.collectors)).toEqual(['request', 'response', 'logs', 'performance', 'routing', 'config']);
    const panel = await (await get(`/_profiler/${tokens.order}?panel=routing`, json)).json();
    expect(panel).toEqual({ token: tokens.order, panel: 'routing', data: expect.objectContaining({ route: '/api/orders/:id', params: { id: '7' } }) });
  });

  it('answers 404 for tokens that are malformed or not stored, with a link to the list', async () => {
    for (const token of ['ABCDEF', 'abc', 'a'.repeat(100), '..%2F..%2Fetc', 'zzzzzz', "'%20OR%201=1%20--", '%00abcdef']) {
      const res = await get(`/_profiler/${token}`);
      expect(res.status, token).toBe(404);
      const page = await res.text();
      expect(page).toContain('href="/_profiler/"');
      expect(page).toMatch(/not a token|No profile is stored|no page/);
    }
    const unknown = await get('/_profiler/0123456789');
    expect(await unknown.text()).toContain('No profile is stored for token &quot;0123456789&quot;');
  });

  it('answers 404 for an unknown panel, naming the available ones', async () => {
    const res = await get(`/_profiler/${tokens.order}?panel=%3Cscript%3E`);
    expect(res.status).toBe(404);
    const page = await res.text();
    expect(page).toContain('There is no panel &quot;&lt;script&gt;&quot;');
    expect(page).toContain('Available panels: request, response, security, graphql, exception, logs, dumps, performance, db, http_client, cache, views, translations, mail, jobs, ai, cpu, routing, config.');
  });

  it('latest opens the newest profile, keeping the panel', async () => {
    const res = await get('/_profiler/latest?panel=logs');
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toMatch(/^\/_profiler\/[0-9a-f]{6}\?panel=logs&type=request$/);
  });

  it('only reads: other methods answer 405', async () => {
    const res = await get('/_profiler/', { method: 'POST' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
  });
});

describe('toolbar', () => {
  it('runs its loader the way the page\'s Content-Security-Policy allows: inline, with the page\'s nonce, from its origin, or not at all', () => {
    const inline = { inline: true };
    const external = { inline: false };
    expect(scriptFor(undefined)).toEqual(inline);
    expect(scriptFor('')).toEqual(inline);
    expect(scriptFor("style-src 'unsafe-inline'")).toEqual(inline);
    expect(scriptFor("script-src 'self' 'unsafe-inline'; default-src 'none'")).toEqual(inline);
    // helmet's default policy: scripts of the page's origin only.
    expect(scriptFor("default-src 'self';base-uri 'self';font-src 'self' https: data:;form-action 'self';frame-ancestors 'self';img-src 'self' data:;object-src 'none';script-src 'self';script-src-attr 'none';style-src 'self' https: 'unsafe-inline';upgrade-insecure-requests")).toEqual(external);
    expect(scriptFor("default-src 'none'; script-src 'nonce-abc123'; style-src 'unsafe-inline'")).toEqual({ inline: true, nonce: 'abc123' });
    expect(scriptFor("script-src 'nonce-abc' 'strict-dynamic' 'self'")).toEqual({ inline: true, nonce: 'abc' });
    expect(scriptFor("script-src 'unsafe-inline' 'sha256-xyz' 'self'")).toEqual(external);
    expect(scriptFor(["script-src 'self' 'unsafe-inline'", "script-src 'self'"])).toEqual(external);
    expect(scriptFor("script-src 'sha256-xyz'")).toBeUndefined();
    expect(scriptFor("script-src 'self' 'strict-dynamic'")).toBeUndefined();
    expect(scriptFor("default-src 'none'")).toBeUndefined();
  });

  it('is injected before </body> of HTML pages and keeps Content-Length right', async () => {
    const res = await get('/page');
    const body = await res.text();
    const token = res.headers.get('x-debug-token');
    expect(body).toMatch(new RegExp(`<div id="wp-wdt" data-token="${token}" hidden></div><script>[\\s\\S]+</script></body></html>$`));
    expect(Number(res.headers.get('content-length'))).toBe(Buffer.byteLength(body));
  });

  it('is not injected into XHR, redirects, attachments or non-HTML', async () => {
    expect(await (await get('/page', { headers: { 'x-requested-with': 'XMLHttpRequest' } })).text()).not.toContain('wp-wdt');
    expect(await (await get('/plain')).text()).toBe('no body tag </body> here');
    expect(await (await get('/download')).text()).toBe('<html><body>file</body></html>');
    expect(await (await get('/go')).text()).not.toContain('wp-wdt');
  });

  it('comes to pages under a strict policy the way it allows, and says once where it cannot', async () => {
    const told: string[] = [];
    const profiler = webProfiler({ database: tempDb(), onError: (m) => told.push(m), trustLocal: false });
    const e = express();
    e.use(profiler);
    const page = (csp: string) => (_req: express.Request, res: express.Response) => res.set('Content-Security-Policy', csp).type('html').send('<html><body>strict</body></html>');
    e.get('/helmet', page("default-src 'self';script-src 'self';script-src-attr 'none';style-src 'self' https: 'unsafe-inline'"));
    e.get('/nonce', page("default-src 'none'; script-src 'nonce-r4nd0m'; connect-src 'self'"));
    e.get('/cdn', page("script-src https://cdn.example.test"));
    e.get('/none', page("script-src 'none'"));
    const strict = await listen(e);
    try {
      expect(await (await fetch(`${strict.url}/helmet`)).text()).toMatch(/hidden><\/div><script src="\/_wdt\/loader\.js"><\/script><\/body>/);
      expect(await (await fetch(`${strict.url}/nonce`)).text()).toMatch(/hidden><\/div><script nonce="r4nd0m">\(function/);
      // A page that runs no script at all, the app's or Express's own "Cannot GET" (default-src 'none'), goes without, unsaid.
      expect(await (await fetch(`${strict.url}/none`)).text()).toBe('<html><body>strict</body></html>');
      const missing = await fetch(`${strict.url}/missing`);
      expect([missing.status, missing.headers.get('content-security-policy')]).toEqual([404, "default-src 'none'"]);
      expect(await missing.text()).not.toContain('wp-wdt');
      expect(told.filter((m) => m.includes('Content-Security-Policy'))).toEqual([]);
      // One that runs scripts, but not from here: said once.
      for (let i = 0; i < 3; i++) expect(await (await fetch(`${strict.url}/cdn`)).text()).toBe('<html><body>strict</body></html>');
      expect(told.filter((m) => m.includes('Content-Security-Policy'))).toHaveLength(1);
      // The loader is the code every page carries inline: it needs no key.
      const loader = await fetch(`${strict.url}/_wdt/loader.js`);
      expect(loader.status).toBe(200);
      expect(loader.headers.get('content-type')).toMatch(/^text\/javascript/);
      expect(await loader.text()).toContain("getElementById('wp-wdt')");
      expect((await fetch(`${strict.url}/_wdt/abcdef`)).status).toBe(403);
    } finally {
      await strict.close();
      profiler.close();
    }
  });

  it('serves the fragment with status, route, time and counts', async () => {
    const res = await get(`/_wdt/${tokens.page}`);
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain('GET /page');
    expect(html).toContain(`href="/_profiler/${tokens.page}?panel=logs"`);
    expect(html).toMatch(/Logs<\/span> <span class="wp-wdt-mono">1</);
    const failed = await (await get(`/_wdt/${tokens.boom}`)).text();
    expect(failed).toContain('Error: boom for the profiler');
    expect((await get('/_wdt/nothere')).status).toBe(404);
    expect((await get('/_wdt/abcdef')).status).toBe(404);
  });
});
