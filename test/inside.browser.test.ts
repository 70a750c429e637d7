import Database from './fixtures/better-sqlite3.cjs';
import express from 'express';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { logger, span, webProfiler, type WebProfiler } from '../src/index.js';
import { CHROMIUM, launch, openPage, shot } from './browser.js';
import { listen, tempDb, type Running } from './helpers.js';

let browser: Browser;
let app: Running;
let profiler: WebProfiler;
let db: Database.Database;
/** A port nothing listens on: taken, then let go. */
let refused: number;

beforeAll(async () => {
  if (!CHROMIUM) return;
  db = new Database(':memory:');
  db.exec(`CREATE TABLE authors (id INTEGER PRIMARY KEY, name TEXT); CREATE TABLE books (id INTEGER PRIMARY KEY, author_id INTEGER, title TEXT);
           CREATE INDEX books_author ON books (author_id);`);
  for (let i = 1; i <= 6; i++) db.prepare('INSERT INTO authors (name) VALUES (?)').run(`Author ${i}`);
  for (let i = 1; i <= 6; i++) db.prepare('INSERT INTO books (author_id, title) VALUES (?, ?)').run(i, `Book ${i}`);
  profiler = webProfiler({ database: tempDb(), onError: () => {} });
  const e = express();
  e.use(profiler);
  e.get('/api/stock/:id', (req, res) => res.json({ id: req.params.id, stock: 3 }));
  e.get('/books', async (_req, res) => {
    const books = db.prepare('SELECT id, author_id, title FROM books ORDER BY title').all() as { author_id: number; title: string }[];
    const rows = await span('load authors', async () => books.map((b) => ({ ...b, author: db.prepare('SELECT name FROM authors WHERE id = ?').get(b.author_id) })));
    const stock = await (await fetch(`${app.url}/api/stock/1`)).json();
    await fetch(`http://127.0.0.1:${refused}/`).catch(() => undefined);
    await span('render', async () => new Promise((r) => setTimeout(r, 4)));
    res.type('html').send(`<!doctype html><html><head><title>Books</title></head><body><h1>Books</h1><p>${rows.length} books, stock ${stock.stock}</p></body></html>`);
  });
  const log = pino({ name: 'orders' }, { write() {} });
  e.get('/logged', async (_req, res) => {
    log.info({ order: 17, total: 42.5 }, 'order priced');
    await new Promise((r) => setTimeout(r, 2));
    log.warn({ order: 17 }, 'stock is low');
    logger.info('app line', { step: 'render' });
    log.error({ err: { type: 'Error', message: 'card declined' } }, 'payment failed');
    res.send('<!doctype html><html><body>logged</body></html>');
  });
  e.use(profiler.notFound);
  e.use(profiler.errorHandler);
  app = await listen(e);
  const spare = await listen((_req: unknown, res: { end(): void }) => res.end());
  refused = Number(new URL(spare.url).port);
  await spare.close();
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
  profiler?.close();
  db?.close();
});

describe.skipIf(!CHROMIUM)('inside the request, in chromium', () => {
  it('the toolbar warns of the N+1; the db panel flags it, explains a query; http_client and the timeline read well in light and dark', async () => {
    for (const scheme of ['light', 'dark'] as const) {
      const { page, errors } = await openPage(browser, scheme);
      await page.goto(`${app.url}/books`);
      const bar = page.locator('#wp-wdt [role="region"]');
      await bar.waitFor();
      expect(await bar.textContent()).toMatch(/DB\s+7 in [\d.]+ ms\s+N\+1/);
      expect(await bar.textContent()).toMatch(/HTTP\s+2/);
      await page.click('#wp-wdt a[href$="?panel=db"]');
      await page.waitForSelector('.callout.warn');
      expect(await page.textContent('.callout.warn')).toContain('this statement ran 6 times from');
      await page.click('#q2 a:has-text("explain")');
      await page.waitForSelector('#q2 .explain');
      expect(await page.textContent('#q2 .explain')).toContain('SEARCH authors USING INTEGER PRIMARY KEY');
      expect(await page.getAttribute('#q2 button.copy', 'data-copy')).toBe('SELECT name FROM authors WHERE id = 2');
      await shot(page, `db-panel-${scheme}`);
      await page.click('[role="tab"]:has-text("Grouped statements")');
      expect(await page.isVisible('#db-groups')).toBe(true);
      await page.click('nav a:has-text("HTTP calls")');
      await page.waitForSelector('.queries');
      expect(await page.textContent('main')).toContain('ECONNREFUSED');
      await page.click('a.tag.link');
      await page.waitForSelector('.summary');
      expect(await page.textContent('.summary')).toContain('/api/stock/1');
      expect(await page.textContent('.summary')).toContain('Called by');
      await page.goBack();
      await shot(page, `http-client-panel-${scheme}`);
      await page.click('nav a:has-text("Performance")');
      await page.waitForSelector('svg.timeline');
      expect(await page.locator('svg.timeline rect.bar-query').count()).toBe(7);
      expect(await page.locator('svg.timeline rect.bar-http').count()).toBe(2);
      expect(await page.locator('svg.timeline rect.bar-span').count()).toBe(2);
      await shot(page, `timeline-${scheme}`);
      expect(errors).toEqual([]);
      await page.context().close();
    }
  });

  it('the logs panel names the logger of each line and filters by it', async () => {
    for (const scheme of ['light', 'dark'] as const) {
      const { page, errors } = await openPage(browser, scheme);
      const res = await page.goto(`${app.url}/logged`);
      profiler.flush();
      await page.goto(`${app.url}/_profiler/${await res!.headerValue('x-debug-token')}?panel=logs`);
      const rows = page.locator('#log-table tbody tr');
      expect(await rows.count()).toBe(4);
      expect(await rows.first().textContent()).toContain('orders');
      await page.uncheck('input[data-filter-by="channel"][value="pino"]');
      expect(await page.locator('#log-table tbody tr:not([hidden])').count()).toBe(1);
      await page.uncheck('input[data-filter-by="level"][value="info"]');
      expect(await page.locator('#log-table tbody tr:not([hidden])').count()).toBe(0);
      await page.check('input[data-filter-by="channel"][value="pino"]');
      expect(await page.locator('#log-table tbody tr:not([hidden])').count()).toBe(2);
      await page.check('input[data-filter-by="level"][value="info"]');
      await shot(page, `logs-panel-${scheme}`);
      expect(errors).toEqual([]);
      await page.context().close();
    }
  });
});
