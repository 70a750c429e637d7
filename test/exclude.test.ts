import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webProfiler } from '../src/index.js';
import { listen, readRows, tempDb, type Running } from './helpers.js';

describe('the exclude option', () => {
  let server: Running;
  let database: string;
  let profiler: ReturnType<typeof webProfiler>;

  beforeAll(async () => {
    database = tempDb();
    profiler = webProfiler({ database, onError: () => {}, exclude: { paths: ['/health', /^\/assets\/.*\.css$/g], statuses: [304] } });
    const app = express();
    app.use(profiler);
    app.get('/health', (_req, res) => res.send('ok'));
    app.get('/health/db', (_req, res) => res.send('ok'));
    app.get('/healthy', (_req, res) => res.send('a page of its own'));
    app.get('/assets/:file', (_req, res) => res.type('css').send('body {}'));
    app.get('/cached', (_req, res) => res.status(304).end());
    app.get('/missing', (_req, res) => res.status(404).send('no such thing'));
    app.use(profiler.notFound);
    server = await listen(app);
  });
  afterAll(async () => {
    await server?.close();
    profiler?.close();
  });

  it('records none of the excluded paths and statuses, and every other request (404s included)', async () => {
    const answers: Record<string, Response> = {};
    for (const path of ['/health', '/health/db?deep=1', '/healthy', '/assets/site.css', '/assets/site.css', '/assets/logo.svg', '/cached', '/missing']) {
      answers[path] = await fetch(`${server.url}${path}`);
      await answers[path].text();
    }
    profiler.flush();
    const stored = readRows(database).map((r) => new URL(r.url).pathname);
    expect(stored).toEqual(['/healthy', '/assets/logo.svg', '/missing']);
    // An excluded path is answered as bare, but for the debug header every response has.
    expect(answers['/health'].headers.get('x-debug-token')).toBeNull();
    expect(answers['/health'].headers.get('x-robots-tag')).toBe('noindex');
    expect(await (await fetch(`${server.url}/health`)).text()).toBe('ok');
  });
});
