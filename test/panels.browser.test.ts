import express from 'express';
import { Redis } from 'ioredis';
import nodemailer from 'nodemailer';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { webProfiler } from '../src/index.js';
import { CHROMIUM, launch, openPage, shot } from './browser.js';
import { listen, type Running } from './helpers.js';

const redisUrl = inject('redisUrl');

let browser: Browser;
let app: Running;
let redis: Redis | undefined;
let profiler: ReturnType<typeof webProfiler>;
/** Requests the app saw that only a script or a remote load in the mail preview would make. */
const leaks: string[] = [];
let token: string;

beforeAll(async () => {
  if (!CHROMIUM) return;
  profiler = webProfiler({ database: ':memory:', onError: () => {} });
  redis = redisUrl ? new Redis(redisUrl) : undefined;
  const mail = nodemailer.createTransport(profiler.mailTransport());
  const e = express();
  e.set('views', path.join(import.meta.dirname, 'fixtures', 'views'));
  e.set('view engine', 'ejs');
  e.use((req, _res, next) => {
    if (req.path === '/ran' || req.path.startsWith('/remote')) leaks.push(req.path);
    next();
  });
  e.use(profiler);
  e.get('/admin', async (_req, res) => {
    if (redis) {
      await redis.set('status:page', 'green', 'EX', 60);
      await redis.get('status:page');
      await redis.get('status:page');
      await redis.get('status:missing');
      await redis.pipeline().get('status:page').incr('views').exec();
    }
    await mail.sendMail({
      from: '"Status page" <status@example.test>',
      to: 'ops@example.test',
      subject: 'Three failed logins for ada',
      text: 'Three failed logins for ada in one minute.',
      html: `<h1 style="font-family:sans-serif">Failed logins</h1><p id="p">Three failed logins for <b>ada</b> in one minute.</p>
        <img id="remote" src="${app.url}/remote.png" alt="remote image">
        <script>document.getElementById('p').textContent = 'SCRIPT RAN'; fetch('/ran'); new Image().src = '/ran';</script>
        <form action="/ran"><button id="go">go</button></form>`,
      attachments: [{ filename: 'attempts.csv', content: 'user,at\nada,12:00\n', contentType: 'text/csv' }],
    });
    res.render('home', { user: 'Ada', title: 'Admin' });
  });
  app = await listen(e);
  browser = await launch();
  const res = await fetch(`${app.url}/admin`);
  token = res.headers.get('x-debug-token')!;
});

afterAll(async () => {
  await browser?.close();
  await app?.close();
  profiler?.close();
  await redis?.quit();
});

describe.skipIf(!CHROMIUM)('the cache, views and mail panels in a browser', () => {
  it('runs no script of a mail and loads nothing it links, in its preview', async () => {
    const { page, errors } = await openPage(browser);
    // Asked for and blocked by the preview's policy is fine; answered is not.
    const answered: string[] = [];
    page.on('requestfinished', (r) => answered.push(r.url()));
    await page.goto(`${app.url}/_profiler/${token}?panel=mail`);
    const frame = page.frameLocator('iframe.mail-preview');
    await expect.poll(() => frame.locator('#p').textContent()).toBe('Three failed logins for ada in one minute.');
    await frame.locator('#go').click({ timeout: 2000 }).catch(() => {});
    await page.waitForTimeout(300);
    expect(await frame.locator('#p').textContent()).toBe('Three failed logins for ada in one minute.');
    expect(leaks).toEqual([]);
    expect(answered.filter((u) => u.includes('/ran') || u.includes('/remote'))).toEqual([]);
    expect(errors).toEqual([]);
    // Opened on its own, the preview is just as bare.
    await page.goto(`${app.url}/_profiler/${token}/mail/1`);
    await page.waitForTimeout(300);
    expect(await page.locator('#p').textContent()).toBe('Three failed logins for ada in one minute.');
    expect(leaks).toEqual([]);
  });

  for (const scheme of ['light', 'dark'] as const) {
    it(`shows the three panels and the toolbar (${scheme})`, async () => {
      const { page, errors } = await openPage(browser, scheme);
      for (const panel of [...(redisUrl ? ['cache'] : []), 'views', 'mail', 'performance']) {
        await page.goto(`${app.url}/_profiler/${token}?panel=${panel}`);
        await page.waitForLoadState('networkidle');
        await shot(page, `panel-${panel}-${scheme}`);
      }
      await page.goto(`${app.url}/admin`);
      await page.locator('#wp-wdt .wp-wdt-bar').waitFor();
      await shot(page, `panel-toolbar-${scheme}`);
      const bar = await page.locator('#wp-wdt .wp-wdt-bar').textContent();
      expect(bar).toContain('Views');
      expect(bar).toContain('Mail');
      if (redisUrl) expect(bar).toMatch(/Cache\s+5 in [^·]+· 3\/4 hit/);
      expect(errors).toEqual([]);
    });
  }
});
