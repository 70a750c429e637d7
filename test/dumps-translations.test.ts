import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, launch, openPage, shot } from './browser.js';
import { readRows, startFixture, tempDb, type FixtureApp } from './helpers.js';
import { assertNoMissingTranslations, matchers, profileOf as testingProfileOf } from '../src/testing/index.js';

const KEY = 'dumps-key';
const SECRET = (pid: number) => `dump-secret-${pid}`;
const asKeyHolder = { accept: 'application/json', 'x-profiler-secret': KEY };

/** A value of a kind, as the dump's tree has it under `key` of the dumped object. */
const entry = (tree: any, key: string) => tree.e.find(([k]: [string]) => k === key)?.[1];

let browser: Browser | undefined;
beforeAll(async () => {
  if (CHROMIUM) browser = await launch();
});
afterAll(async () => {
  await browser?.close();
});

describe.each([
  ['a CommonJS Express 4 app', 'test/fixtures/dumps/app4.cjs', 'express4'],
  ['an ES module Express 5 app', 'test/fixtures/dumps/app5.mjs', 'express5'],
])('%s: dump() and i18next', (_name, fixture, shortName) => {
  const file = path.resolve(fixture);
  const routes = path.resolve('test/fixtures/dumps/routes.cjs');
  const line = (f: string, text: string) => `${f}:${readFileSync(f, 'utf8').split('\n').findIndex((l) => l.includes(text)) + 1}`;
  let app: FixtureApp;
  let database: string;
  beforeAll(async () => {
    database = tempDb();
    app = await startFixture(file, [database]);
  });
  afterAll(() => app.stop());

  const profileOf = async (res: Response) => (await fetch(`${app.url}/_profiler/${res.headers.get('x-debug-token')}`, { headers: asKeyHolder })).json();

  it('keeps each dump with its label, line and time, as a snapshot that ran none of the app\'s code', async () => {
    const res = await fetch(`${app.url}/dump`);
    expect(await res.text()).toContain('dumped true');
    const profile = await profileOf(res);
    const [first, big] = profile.collectors.dumps.dumps;
    expect(first).toMatchObject({ label: 'the order', at: line(routes, "dump(value, 'the order')") });
    expect(first.time).toBeGreaterThan(0);
    const v = first.value;
    expect(entry(v, 'order')).toMatchObject({ k: 'object', c: 'Order', e: [['id', { k: 'number', v: '42' }], ['lines', { k: 'array' }]] });
    expect(entry(v, 'none')).toEqual({ k: 'null' });
    expect(entry(v, 'missing')).toEqual({ k: 'undefined' });
    expect(entry(v, 'numbers').e.map(([, n]: [string, any]) => n.v)).toEqual(['1', '-0', 'NaN', 'Infinity', `${2n ** 70n}n`]);
    expect(entry(v, 'text')).toMatchObject({ k: 'string', n: 5000 });
    expect(entry(v, 'text').v.length).toBe(2000);
    expect(entry(v, 'when')).toEqual({ k: 'date', v: '2026-11-27T00:00:00.000Z' });
    expect(entry(v, 'pattern')).toEqual({ k: 'regexp', v: '/ab+c/gi' });
    expect(entry(v, 'failure')).toMatchObject({ k: 'error', c: 'TypeError', v: 'the order is gone' });
    expect(entry(v, 'failure').stack).toContain('routes.cjs');
    expect(entry(v, 'tags')).toMatchObject({ k: 'set', c: 'Set', e: [['0', { k: 'string', v: 'new' }], ['1', { k: 'string', v: 'paid' }]] });
    expect(entry(v, 'bytes')).toEqual({ k: 'bytes', c: 'Buffer', n: 12, v: '68 65 6c 6c 6f 2c 20 77 6f 72 6c 64' });
    expect(entry(v, 'floats')).toMatchObject({ k: 'bytes', c: 'Float64Array', n: 2 });
    expect(entry(v, 'callback')).toEqual({ k: 'function', v: 'onPaid' });
    expect(entry(v, 'kind')).toEqual({ k: 'symbol', v: 'Symbol(order)' });
    expect(entry(v, 'pending')).toEqual({ k: 'promise', v: 'pending' });
    // A cycle and a shared reference, marked; a getter named, not called; a Proxy shown as one.
    expect(v.id).toBeGreaterThan(0);
    expect(entry(v, 'self')).toEqual({ k: 'ref', id: v.id, cycle: true });
    expect(entry(v, 'shared').e[1][1]).toMatchObject({ k: 'ref' });
    expect(entry(v, 'loud')).toEqual({ k: 'getter' });
    expect(entry(v, 'guarded')).toEqual({ k: 'proxy' });
    // A secret-named field, redacted as any value.
    expect(entry(entry(v, 'account'), 'password')).toMatchObject({ k: 'string', v: '[redacted]' });
    // A Map of a million entries: its first entries and how many it has, read in as many steps.
    expect(entry(v, 'big')).toMatchObject({ k: 'map', n: 1_000_000 });
    expect(entry(v, 'big').e).toHaveLength(100);
    // Read in a hundred steps, not a million: timed in the app beside ten walks of the Map.
    expect(Number(res.headers.get('x-dump-ms'))).toBeLessThan(Number(res.headers.get('x-walk-ms')));
    expect(big).toMatchObject({ label: 'the big map', value: { k: 'map', c: 'Map', n: 1_000_000 } });
    // No getter or trap of the app's ran, so nothing was logged or thrown.
    expect(app.stderr()).not.toMatch(/a getter ran|a trap ran/);
    expect(profile.collectors.logs?.lines ?? []).toEqual([]);
    // The toolbar counts them and lists them; the store keeps no secret.
    const toolbar = await (await fetch(`${app.url}/_wdt/${profile.token}`, { headers: { 'x-profiler-secret': KEY } })).text();
    expect(toolbar).toContain('Dumps');
    expect(toolbar).toContain('the order');
    const stored = readFileSync(database).toString('latin1') + JSON.stringify(readRows(database));
    expect(stored).not.toContain(SECRET(app.child.pid!));
  });

  it('a dump in a command lands in its profile; one outside any recording is printed with its line', async () => {
    const res = await fetch(`${app.url}/command`);
    expect(await res.text()).toBe('ran');
    // Stored by the writer with its next batch: waited for.
    const commandRow = () => readRows(database).find((r) => r.type === 'command' && r.url === 'nightly report');
    await expect.poll(commandRow, { timeout: 15_000 }).toBeDefined();
    const command = commandRow()!;
    expect(command.collectors.dumps.dumps[0]).toMatchObject({ label: 'in a command', value: { k: 'object', e: [['rows', { k: 'number', v: '3' }]] } });
    expect(app.stderr()).toContain(`[dump] before any request at ${line(file, "dump({ starting: true")}`);
    expect(app.stderr()).toMatch(/starting: true,\n\s+port: 0/);
  });

  it('records each message i18next translated: found, fell back, missing; plurals and namespaces; each request in its own language', async () => {
    const [de, fr] = await Promise.all([fetch(`${app.url}/greet?lng=de&name=Ada`), fetch(`${app.url}/greet?lng=fr&name=Grace`)]);
    expect(await de.json()).toMatchObject({ first: 'Hallo Ada', apples: '3 Äpfel', apple: 'Ein Apfel', only: 'Only in English', missing: 'no.such.key', cart: 'Dein Warenkorb', language: 'de' });
    expect(await fr.json()).toMatchObject({ first: 'Bonjour Grace', apples: '3 apples', cart: 'Your cart', language: 'fr' });
    const t = (await profileOf(de)).collectors.translations;
    expect(t.language).toBe('de');
    expect(t.known.sort()).toEqual(['de', 'en', 'fr']);
    expect(t.counts).toEqual({ missing: 1, fallback: 1, found: 4 });
    // Missing first, then fallbacks, then found.
    expect(t.messages.map((m: any) => [m.state, `${m.ns}:${m.key}`, m.lng, m.usedLng ?? null])).toEqual([
      ['missing', 'translation:no.such.key', 'de', null],
      ['fallback', 'translation:only_en', 'de', 'en'],
      ['found', 'translation:hello', 'de', 'de'],
      ['found', 'translation:apples_other', 'de', 'de'],
      ['found', 'translation:apples_one', 'de', 'de'],
      ['found', 'shop:cart', 'de', 'de'],
    ]);
    const hello = t.messages.find((m: any) => m.key === 'hello');
    expect(hello).toMatchObject({ count: 2, values: { name: 'Ada' }, result: 'Hallo Ada' });
    expect(t.messages.find((m: any) => m.key === 'apples_other').values).toEqual({ count: 3 });
    const frT = (await profileOf(fr)).collectors.translations;
    expect(frT.language).toBe('fr');
    expect(frT.messages.every((m: any) => m.lng === 'fr')).toBe(true);
    expect(frT.messages.find((m: any) => m.key === 'apples_other')).toMatchObject({ state: 'fallback', usedLng: 'en' });
    // The menu's badge says what is missing; the page lists it first.
    const page = await (await fetch(`${app.url}/_profiler/${de.headers.get('x-debug-token')}?panel=translations`, { headers: { 'x-profiler-secret': KEY } })).text();
    expect(page).toMatch(/Translations<\/span><span class="badge s-client" title="1 missing">1 missing/);
    expect(page.indexOf('no.such.key')).toBeLessThan(page.indexOf('only_en'));
    // In the app's tests: the matcher and the assertion say which key is missing.
    const read = { url: app.url, headers: { 'x-profiler-secret': KEY } };
    const verdict = await matchers.toHaveNoMissingTranslations.call({}, await testingProfileOf(de, read));
    expect(verdict.pass).toBe(false);
    expect(verdict.message()).toContain('translation:no.such.key (de)');
    await expect(assertNoMissingTranslations(await testingProfileOf(de, read))).rejects.toThrow(/1 missing translation/);
  });

  it("reads the values given to a translation as data: no getter of the app's called, no Proxy trap run", async () => {
    // What i18next itself runs of them, bare, in this process (it reads its options once itself).
    const i18n = (await import('i18next')).default.createInstance();
    await i18n.init({ lng: 'en', resources: { en: { translation: { hello: 'Hello {{name}}' } } } });
    const bare: string[] = [];
    const extra = new Proxy({ shown: 1 }, { ownKeys: (t) => (bare.push('ownKeys'), Reflect.ownKeys(t)), get: (t, k) => (bare.push('get'), Reflect.get(t, k)), getOwnPropertyDescriptor: (t, k) => (bare.push('descriptor'), Reflect.getOwnPropertyDescriptor(t, k)) });
    i18n.t('hello', { name: 'Ada', extra, get computed() { bare.push('getter'); return 'computed'; } } as never);
    const res = await fetch(`${app.url}/guarded?lng=en`);
    expect(await res.json()).toEqual({ text: 'Hello Ada', ran: bare });
    const hello = (await profileOf(res)).collectors.translations.messages.find((m: any) => m.key === 'hello');
    expect(hello.values).toEqual({ name: 'Ada', extra: '[Proxy]' });
  });

  it('profileOf() gives a test the dumps, each as a tree and as text', async () => {
    const res = await fetch(`${app.url}/dump`);
    await res.text();
    const profile = await testingProfileOf(res, { url: app.url, headers: { 'x-profiler-secret': KEY } });
    expect(profile.dumps.map((d) => d.label)).toEqual(['the order', 'the big map']);
    expect(profile.dumps[0].text).toMatch(/^<ref \*1> \{\n  order: <ref \*2> Order \{\n    id: 42,/);
    expect(profile.dumps[1].text).toContain('… 999900 more');
  });

  it.skipIf(!CHROMIUM)('shows the dumps as trees that unfold and can be searched, light and dark, 390 and 1280 px', async () => {
    const res = await fetch(`${app.url}/dump`);
    await res.text();
    const token = res.headers.get('x-debug-token');
    for (const scheme of ['light', 'dark'] as const) {
      for (const width of [390, 1280]) {
        const { page, errors } = await openPage(browser!, scheme, width);
        await page.setExtraHTTPHeaders({ 'x-profiler-secret': KEY });
        await page.goto(`${app.url}/_profiler/${token}?panel=dumps`);
        // Opened to a useful depth: the order's class is there; its lines are one level further.
        const order = page.locator('#dump-1 details:has(> summary .v-class:text-is("Order"))').first();
        await expect.poll(() => order.isVisible()).toBe(true);
        const lines = order.locator('details:has(> summary .v-class:text-is("Array"))').first();
        if (!(await lines.evaluate((d) => (d as HTMLDetailsElement).open))) await lines.locator('> summary').click();
        expect(await lines.evaluate((d) => (d as HTMLDetailsElement).open)).toBe(true);
        expect(await lines.locator('.v-str').first().textContent()).toBe('"A-1"');
        await page.fill('[data-dump-search]', 'the big map');
        await expect.poll(() => page.locator('#dump-1').isHidden()).toBe(true);
        expect(await page.locator('#dump-2').isVisible()).toBe(true);
        await page.fill('[data-dump-search]', '');
        await shot(page, `dumps-${shortName}-${scheme}-${width}`, false);
        await page.goto(`${app.url}/_profiler/${(await (await fetch(`${app.url}/greet?lng=de&name=Ada`)).headers.get('x-debug-token'))}?panel=translations`);
        await shot(page, `translations-${shortName}-${scheme}-${width}`, false);
        // The page that dumped: the toolbar counts the dumps and lists them in its popup.
        await page.goto(`${app.url}/dump`);
        const item = page.locator('#wp-wdt .wp-wdt-dumps > summary');
        await item.waitFor({ timeout: 30_000 });
        expect(await item.textContent()).toMatch(/Dumps\s*2/);
        await item.click();
        expect(await page.locator('#wp-wdt .wp-wdt-pop').textContent()).toContain('the order');
        await shot(page, `dumps-toolbar-${shortName}-${scheme}-${width}`, false);
        expect(errors).toEqual([]);
        await page.context().close();
      }
    }
  });
});

describe('in production', () => {
  it('dump() stores nothing and prints nothing', async () => {
    const database = tempDb();
    const app = await startFixture(path.resolve('test/fixtures/dumps/app4.cjs'), [database], { NODE_ENV: 'production' });
    try {
      const res = await fetch(`${app.url}/dump`);
      expect(await res.text()).toContain('dumped true');
      expect(res.headers.get('x-debug-token')).toBeNull();
      expect(app.stderr()).not.toContain('[dump]');
    } finally {
      await app.stop();
    }
  });
});
