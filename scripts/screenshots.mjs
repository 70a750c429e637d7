// npm run screenshots: the README's pictures, taken from the demo as it runs now, so they stay true.
// The list, a refused sign-in's profile, a database panel and the insights page, light and dark, into docs/images/.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { createDemoApp } from '../dist/demo/app.js';
import { configFrom } from '../dist/demo/config.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.join(root, 'docs', 'images');
mkdirSync(out, { recursive: true });
const storage = mkdtempSync(path.join(tmpdir(), 'wp-shots-'));
const seed = { username: 'ada', password: 'correct horse battery staple' };
const demo = await createDemoApp(configFrom({ ...process.env, APP_ENV: 'dev', STORAGE_DIR: storage, PORT: '0' }), { seed });
const server = demo.app.listen(0, '127.0.0.1');
await new Promise((resolve) => server.once('listening', resolve));
const base = `http://127.0.0.1:${server.address().port}`;
const post = (body) => fetch(`${base}/api/authenticate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
try {
  // A few requests of each kind, as a developer's session leaves them.
  const signedIn = await (await post(seed)).json();
  await fetch(`${base}/api/me`, { headers: { authorization: `Bearer ${signedIn.token}` } });
  await fetch(`${base}/pub/status/db`);
  await fetch(`${base}/pub/status/web`);
  await fetch(`${base}/robots.txt`, { headers: { accept: 'text/html' } });
  const ok = await post(seed);
  const refused = await post({ username: 'mallory', password: 'hunter2' });
  demo.profiler.flush();
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'] });
  const pages = [
    ['list', '/_profiler/'],
    ['refused', `/_profiler/${refused.headers.get('x-debug-token')}`],
    ['db', `/_profiler/${ok.headers.get('x-debug-token')}?panel=db`],
    ['insights', '/_profiler/insights'],
  ];
  for (const scheme of ['light', 'dark']) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 720 }, colorScheme: scheme, deviceScaleFactor: 1 });
    const page = await context.newPage();
    await page.goto(`${base}/_profiler/?_profiler_secret=${encodeURIComponent(demo.profiler.options.secret)}`);
    for (const [name, url] of pages) {
      await page.goto(base + url);
      await page.screenshot({ path: path.join(out, `${name}-${scheme}.png`) });
      process.stdout.write(`docs/images/${name}-${scheme}.png\n`);
    }
    await context.close();
  }
  await browser.close();
} finally {
  server.close();
  demo.close();
  rmSync(storage, { recursive: true, force: true });
}
