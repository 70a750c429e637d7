import express, { type NextFunction, type Request, type Response } from 'express';
import Joi from 'joi';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dump, webProfiler, type WebProfiler } from '../src/index.js';
import { listen, readRows, tempDb, type Running } from './helpers.js';

/**
 * What the fifth audit and the fifth round of real apps found stored or said wrong, each as they
 * planted it. Secrets are made at run time, so that no code excerpt of this file holds them.
 */
const stamp = `${process.pid}${Date.now().toString(36)}`;
const SIGNING_KEY = Buffer.from(`signing-key-${stamp}-0123456789abcdef`);
const SHORT_PASSWORD = `pw${stamp.slice(-5)}`;
const PARAM_TOKEN = `prm${stamp}Tk81-reset-0a9`;
const QUERY_KEY = `qk${stamp}Zz4`;

let server: Running;
let profiler: WebProfiler;
let database: string;

beforeAll(async () => {
  database = tempDb();
  profiler = webProfiler({ database, onError: () => {} });
  const app = express();
  app.use(profiler);
  app.use(express.json());
  app.use(express.urlencoded({ extended: false }));
  app.get('/bytes', (_req: Request, res: Response) => {
    dump({ jwtSecret: SIGNING_KEY, apiKey: new Uint8Array(SIGNING_KEY), avatar: Buffer.from('GIF89a') }, 'keys');
    res.send('dumped');
  });
  app.post('/pattern', (req: Request, res: Response) => {
    const { error } = Joi.object({ password: Joi.string().pattern(/^[a-z]{12}$/) }).validate(req.body);
    res.status(error ? 400 : 200).send(error ? 'bad' : 'ok');
  });
  app.get('/bound', (_req: Request, _res: Response, next: NextFunction) => next(Object.assign(new Error('could not save'), { parameters: ['ada@example.test', PARAM_TOKEN] })));
  app.get('/axios', (_req: Request, _res: Response, next: NextFunction) => next(Object.assign(new Error('Request failed with status code 403'), { config: { method: 'get', url: 'https://maps.example.test/v1/geocode', params: { key: QUERY_KEY, q: 'Paris' } } })));
  app.post('/names', (req: Request, res: Response) => res.json(req.body));
  app.post('/form', (req: Request, res: Response) => res.send(`hello ${req.body.name}`));
  app.use(profiler.errorHandler);
  server = await listen(app);
});

afterAll(async () => {
  await server?.close();
  profiler?.close();
});

const storedFile = () => readFileSync(database).toString('latin1') + readFileSync(`${database}-wal`, { flag: 'a+' }).toString('latin1');
const rowOf = (res: globalThis.Response) => {
  profiler.flush();
  return readRows(database).find((r) => r.token === res.headers.get('x-debug-token'))!;
};

describe('the fifth audit', () => {
  it('M2: bytes under a secret name keep their class and length only', async () => {
    const res = await fetch(`${server.url}/bytes`);
    const [dumped] = rowOf(res).collectors.dumps.dumps;
    const entries = Object.fromEntries(dumped.value.e);
    expect(entries.jwtSecret).toMatchObject({ k: 'bytes', c: 'Buffer', n: SIGNING_KEY.length, v: '[redacted]' });
    expect(entries.apiKey).toMatchObject({ k: 'bytes', c: 'Uint8Array', n: SIGNING_KEY.length, v: '[redacted]' });
    // Bytes under any other name are shown.
    expect(entries.avatar.v).toBe('47 49 46 38 39 61');
    expect(storedFile()).not.toContain(SIGNING_KEY.subarray(0, 8).toString('hex').match(/../g)!.join(' '));
  });

  it('M3: a short password a rule refused is cut from the message that quotes it', async () => {
    const res = await fetch(`${server.url}/pattern`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ password: SHORT_PASSWORD }) });
    expect(res.status).toBe(400);
    const [check] = rowOf(res).collectors.security.checks;
    expect(check.fields.errors[0]).toMatchObject({ field: 'password', code: 'string.pattern.base', value: '[redacted]' });
    expect(check.fields.errors[0].message).toContain('with value "[redacted]"');
    expect(JSON.stringify(rowOf(res))).not.toContain(SHORT_PASSWORD);
    expect(storedFile()).not.toContain(SHORT_PASSWORD);
  });

  it("A4-M2: an error's bound values with no statement beside them, and an HTTP client's query parameters", async () => {
    const bound = await fetch(`${server.url}/bound`, { headers: { accept: 'application/json' } });
    const axios = await fetch(`${server.url}/axios`, { headers: { accept: 'application/json' } });
    const details = (res: globalThis.Response) => rowOf(res).collectors.exception.chain[0].details;
    expect(details(bound).parameters).toEqual(['ada@example.test', '[redacted]']);
    expect(details(axios).config.params).toEqual({ key: '[redacted]', q: 'Paris' });
    const file = storedFile();
    expect(file).not.toContain(PARAM_TOKEN);
    expect(file).not.toContain(QUERY_KEY);
  });

  it('names that name a secret, say its kind or count it keep their values', async () => {
    const body = { tokenName: 'ci-deploy', token_name: 'nightly', sessionName: 'sid', tokenType: 'Bearer', token_count: 3, token: `t${stamp}`, sessionToken: `s${stamp}` };
    const res = await fetch(`${server.url}/names`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(await res.json()).toEqual(body);
    expect(rowOf(res).collectors.request.body.json).toEqual({ ...body, token: '[redacted]', sessionToken: '[redacted]' });
  });

  it("a parsed form's JSON twin says form, as its page does", async () => {
    const res = await fetch(`${server.url}/form`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'name=Ada&lang=en' });
    expect(await res.text()).toBe('hello Ada');
    const token = res.headers.get('x-debug-token');
    const twin = await (await fetch(`${server.url}/_profiler/${token}?panel=request`, { headers: { accept: 'application/json' } })).json();
    expect(twin.data.body).toMatchObject({ kind: 'form', json: { name: 'Ada', lang: 'en' } });
    const page = await (await fetch(`${server.url}/_profiler/${token}?panel=request`)).text();
    expect(page).toContain('parsed as a form');
  });
});
