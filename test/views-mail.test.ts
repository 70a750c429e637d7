import express from 'express';
import { Eta } from 'eta';
import hbs from 'hbs';
import nodemailer from 'nodemailer';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webProfiler } from '../src/index.js';
import { listen, readRows, tempDb, type Running } from './helpers.js';

const views = path.join(import.meta.dirname, 'fixtures', 'views');

let server: Running;
let profiler: ReturnType<typeof webProfiler>;
let database: string;

beforeAll(async () => {
  database = tempDb();
  profiler = webProfiler({ database, onError: () => {} });
  const app = express();
  app.set('views', views);
  app.set('view engine', 'ejs');
  app.engine('hbs', hbs.__express);
  const eta = new Eta({ views });
  app.engine('eta', (file: string, options: object, done: (err: unknown, html?: string) => void) => {
    try {
      done(null, eta.render(path.basename(file), options));
    } catch (err) {
      done(err);
    }
  });
  const RESET_LINK = 'https://app.example.test/reset/8f14e45fceea167a5a36dedd4bea2543';
  const streamed = nodemailer.createTransport({ streamTransport: true, buffer: true });
  const recorded = nodemailer.createTransport(profiler.mailTransport());
  app.use(profiler);
  app.get('/page/:file', (req, res) => res.render(req.params.file, { user: 'Ada', title: 'Home' }));
  app.get('/mail/:how', async (req, res) => {
    const transport = req.params.how === 'stream' ? streamed : recorded;
    const info = await transport.sendMail({
      from: '"Status" <status@example.test>',
      to: ['ada@example.test', { name: 'Grace', address: 'grace@example.test' }],
      cc: 'ops@example.test',
      subject: 'Your password was reset',
      text: `Hello Ada. password=hunter2 was set. Not you? ${RESET_LINK} or sign in at https://app.example.test/magic/Zx81kq. See https://blog.example.test/posts/how-we-built-it-2024-edition`,
      html: `<h1>Hello Ada</h1><p id="p">password=hunter2 was set.</p><a href="${RESET_LINK}?utm=mail">Not you?</a><img src="https://tracker.example.test/pixel.gif"><script>document.getElementById("p").textContent = "SCRIPT RAN"; fetch("/ran")</script>`,
      attachments: [{ filename: 'report.csv', content: 'id,name\n1,Ada\n', contentType: 'text/csv' }, { filename: 'logo.png', content: Buffer.from([137, 80, 78, 71]) }],
    });
    res.json({ messageId: info.messageId });
  });
  // A request that sends many large messages (a newsletter run in a request).
  app.get('/mail-many', async (_req, res) => {
    const body = 'x'.repeat(60 * 1024);
    for (let i = 1; i <= 120; i++) await recorded.sendMail({ from: 'news@example.test', to: `reader${i}@example.test`, subject: `Issue ${i}`, text: body, html: `<p>${body}</p>` });
    res.send('sent');
  });
  app.get('/mail-fails', async (_req, res) => {
    const failing = nodemailer.createTransport({ host: '127.0.0.1', port: 9, connectionTimeout: 500 });
    try {
      await failing.sendMail({ from: 'a@example.test', to: 'b@example.test', subject: 'never', text: 'x' });
      res.send('sent');
    } catch (err) {
      res.status(502).send((err as Error).message);
    }
  });
  app.use(profiler.errorHandler);
  server = await listen(app);
});

afterAll(async () => {
  await server?.close();
  profiler?.close();
});

async function panel(path: string, id: string) {
  const res = await fetch(server.url + path);
  const body = await res.text();
  const token = res.headers.get('x-debug-token')!;
  const json = await (await fetch(`${server.url}/_profiler/${token}?panel=${id}`, { headers: { accept: 'application/json' } })).json();
  return { status: res.status, body, token, data: json.data };
}

describe('the views panel', () => {
  it.each([
    ['home', 'ejs', 'home.ejs'],
    ['home.pug', 'pug', 'home.pug'],
    ['home.hbs', 'hbs', 'home.hbs'],
    ['home.eta', 'eta', 'home.eta'],
  ])('records res.render(%j) with its engine (%s), file, locals and time', async (name, engine, file) => {
    const { status, body, data } = await panel(`/page/${name}`, 'views');
    expect(status).toBe(200);
    expect(body).toContain('Hello Ada');
    expect(data.count).toBe(1);
    expect(data.renders[0]).toMatchObject({ name, engine, file: path.join(views, file) });
    expect(data.renders[0].locals).toEqual(expect.arrayContaining(['user', 'title']));
    expect(data.renders[0].locals).not.toContain('settings');
    expect(data.renders[0].duration).toBeGreaterThan(0);
  });

  it('hbs: the page, its layout and its partials, each a render of its own, the layout and partials inside the page', async () => {
    const dir = path.join(views, 'hbs-layout');
    const engine = hbs.create();
    engine.registerPartial('card', '<p class="card">card of {{user}}</p>');
    const render = (app: express.Express) => {
      app.set('views', dir);
      app.set('view engine', 'hbs');
      app.engine('hbs', engine.__express);
      app.get('/hbs', (req, res) => res.render('page', { user: 'Ada' }));
      return app;
    };
    const bare = await listen(render(express()));
    const own = webProfiler({ database: tempDb(), onError: () => {} });
    const recordedApp = express();
    recordedApp.use(own);
    const recorded = await listen(render(recordedApp));
    try {
      const expected = await (await fetch(`${bare.url}/hbs`)).text();
      const res = await fetch(`${recorded.url}/hbs`);
      // The same page as bare (the toolbar aside).
      expect((await res.text()).replace(/<div id="wp-wdt"[\s\S]*<\/script>(?=<\/body>)/, '')).toBe(expected);
      expect(expected).toBe('<html><body class="layout"><h1>Hello Ada</h1><p class="card">card of Ada</p>\n</body></html>\n');
      const data = (await (await fetch(`${recorded.url}/_profiler/${res.headers.get('x-debug-token')}?panel=views`, { headers: { accept: 'application/json' } })).json()).data;
      expect(data.renders.map((r: { name: string; engine: string; file: string; parent?: number }) => [r.name, r.engine, r.file, r.parent])).toEqual([
        ['page', 'hbs', path.join(dir, 'page.hbs'), undefined],
        ['card', 'handlebars partial', '', 0],
        ['layout.hbs', 'hbs', path.join(dir, 'layout.hbs'), 0],
      ]);
    } finally {
      await bare.close();
      await recorded.close();
      own.close();
    }
  });

  it('shows a broken template on the exception page with its file, line and code, and the failed render', async () => {
    const res = await fetch(`${server.url}/page/broken`, { headers: { accept: 'text/html' } });
    expect(res.status).toBe(500);
    const page = await res.text();
    expect(page).toContain('template broken');
    expect(page).toContain('broken.ejs');
    expect(page).toContain('missing.name');
    const token = res.headers.get('x-debug-token')!;
    const exception = (await (await fetch(`${server.url}/_profiler/${token}?panel=exception`, { headers: { accept: 'application/json' } })).json()).data;
    expect(exception.chain[0].frames[0]).toMatchObject({ fn: 'template broken', file: path.join(views, 'broken.ejs'), line: 3, kind: 'app' });
    expect(exception.chain[0].frames[0].excerpt.lines.join('\n')).toContain('<%= missing.name %>');
    const rendered = (await (await fetch(`${server.url}/_profiler/${token}?panel=views`, { headers: { accept: 'application/json' } })).json()).data;
    expect(rendered.errors).toBe(1);
    expect(rendered.renders[0].error.message).toContain('missing is not defined');
  });

  it('keeps the locals\' values only where the viewLocals option asks, redacted', async () => {
    expect((await panel('/page/home', 'views')).data.renders[0].values).toBeUndefined();
    const own = webProfiler({ database: tempDb(), viewLocals: true, onError: () => {} });
    const app = express();
    app.set('views', views);
    app.set('view engine', 'ejs');
    app.use(own);
    app.get('/', (_req, res) => res.render('home', { user: 'Ada', title: 'Home', password: 'hunter2', cart: { items: 2 } }));
    const other = await listen(app);
    try {
      const res = await fetch(other.url);
      const token = res.headers.get('x-debug-token')!;
      const data = (await (await fetch(`${other.url}/_profiler/${token}?panel=views`, { headers: { accept: 'application/json' } })).json()).data;
      expect(data.renders[0].values).toEqual({ user: 'Ada', title: 'Home', password: '[redacted]', cart: { items: 2 } });
    } finally {
      await other.close();
      own.close();
    }
  });

  it('gives pug errors their line', async () => {
    const { status, token } = await panel('/page/broken.pug', 'views');
    expect(status).toBe(500);
    const exception = (await (await fetch(`${server.url}/_profiler/${token}?panel=exception`, { headers: { accept: 'application/json' } })).json()).data;
    expect(exception.chain[0].frames[0]).toMatchObject({ fn: 'template broken.pug', line: 3 });
  });
});

describe('the mail panel', () => {
  it('keeps no one-time code of a link in path form, and the links that hold none', async () => {
    const { data } = await panel('/mail/recorded', 'mail');
    const m = JSON.stringify(data);
    for (const code of ['8f14e45fceea167a5a36dedd4bea2543', 'Zx81kq']) expect(m).not.toContain(code);
    expect(m).toContain('https://app.example.test/reset/[redacted]');
    expect(m).toContain('https://app.example.test/magic/[redacted]');
    expect(m).toContain('https://blog.example.test/posts/how-we-built-it-2024-edition');
  });

  it.each(['stream', 'recorded'])('records a message sent through %s, with its addresses, bodies (redacted) and attachments', async (how) => {
    const { status, data, token } = await panel(`/mail/${how}`, 'mail');
    expect(status).toBe(200);
    expect(data.count).toBe(1);
    const m = data.messages[0];
    expect(m).toMatchObject({
      n: 1,
      subject: 'Your password was reset',
      from: ['"Status" <status@example.test>'],
      to: ['ada@example.test', '"Grace" <grace@example.test>'],
      cc: ['ops@example.test'],
      bcc: [],
      transport: how === 'stream' ? 'StreamTransport' : 'web-profiler',
      attachments: [{ filename: 'report.csv', contentType: 'text/csv', size: 14 }, { filename: 'logo.png', size: 4 }],
    });
    expect(m.duration).toBeGreaterThan(0);
    expect(m.messageId).toMatch(/^<.+@.+>$/);
    expect(JSON.stringify(data)).not.toContain('hunter2');
    const eml = await fetch(`${server.url}/_profiler/${token}/mail/1.eml`);
    expect(eml.status).toBe(200);
    expect(eml.headers.get('content-type')).toBe('message/rfc822');
    expect(eml.headers.get('content-disposition')).toBe(`attachment; filename="${token}-1.eml"`);
    const raw = await eml.text();
    expect(raw).toContain('Subject: Your password was reset');
    expect(raw).toContain('To: ada@example.test, "Grace" <grace@example.test>');
    expect(raw).toContain('filename="report.csv"');
    expect(raw).toContain(Buffer.from('id,name\n1,Ada\n').toString('base64'));
    expect(raw).not.toContain(Buffer.from('password=hunter2').toString('base64').slice(0, 16));
  });

  it('keeps at most 1 MiB of mail content a request, every message listed; previews load as they come into view', async () => {
    const { status, data, token } = await panel('/mail-many', 'mail');
    expect(status).toBe(200);
    expect(data.count).toBe(120);
    expect(data.messages.map((m: { subject: string }) => m.subject).slice(-1)).toEqual(['Issue 120']);
    const kept = data.messages.reduce((sum: number, m: { text?: unknown; html?: unknown }) => sum + (typeof m.text === 'string' ? m.text.length : 0) + (typeof m.html === 'string' ? m.html.length : 0), 0);
    expect(kept).toBeLessThanOrEqual(1024 * 1024);
    expect(kept).toBeGreaterThan(900 * 1024);
    expect(data.messages[119]).toMatchObject({ to: ['reader120@example.test'], cut: true });
    profiler.flush();
    const [row] = readRows(database).filter((r) => r.token === token);
    expect(JSON.stringify(row.collectors.mail).length).toBeLessThan(1.2 * 1024 * 1024);
    const page = await (await fetch(`${server.url}/_profiler/${token}?panel=mail`)).text();
    expect(page.match(/<iframe [^>]*loading="lazy"/g)?.length).toBe(page.match(/<iframe /g)?.length);
    expect(page).toContain('past what one request keeps of its mail in all (1 MiB)');
  });

  it('serves the HTML preview under a sandbox policy that loads nothing, behind the access check', async () => {
    const { token } = await panel('/mail/recorded', 'mail');
    const preview = await fetch(`${server.url}/_profiler/${token}/mail/1`);
    expect(preview.status).toBe(200);
    const csp = preview.headers.get('content-security-policy')!;
    expect(csp.split(';').map((d) => d.trim())).toEqual(expect.arrayContaining(['sandbox', "default-src 'none'", "img-src data:"]));
    expect(csp).not.toContain('allow-scripts');
    expect(csp).not.toContain('allow-same-origin');
    expect(await preview.text()).toContain('<h1>Hello Ada</h1>');
    expect((await fetch(`${server.url}/_profiler/${token}/mail/2`)).status).toBe(404);
    const page = await (await fetch(`${server.url}/_profiler/${token}?panel=mail`)).text();
    expect(page).toContain(`src="/_profiler/${token}/mail/1"`);
    expect(page).toContain('sandbox=""');
  });

  it('records a message the transport could not send, with the error', async () => {
    const { status, data } = await panel('/mail-fails', 'mail');
    expect(status).toBe(502);
    expect(data.errors).toBe(1);
    expect(data.messages[0].error.message).toMatch(/ECONNREFUSED|connect/);
  });

  it('puts renders and mail on the timeline and the toolbar', async () => {
    const res = await fetch(`${server.url}/mail/recorded`);
    const token = res.headers.get('x-debug-token')!;
    const perf = (await (await fetch(`${server.url}/_profiler/${token}?panel=performance`, { headers: { accept: 'application/json' } })).json()).data;
    expect(perf.timeline.filter((r: any) => r.kind === 'mail').map((r: any) => r.name)).toEqual(['mail Your password was reset']);
    const page = await fetch(`${server.url}/page/home`);
    const bar = await (await fetch(`${server.url}/_wdt/${page.headers.get('x-debug-token')}`)).text();
    expect(bar).toMatch(/Views<\/span> <span class="wp-wdt-mono">1 in /);
  });
});
