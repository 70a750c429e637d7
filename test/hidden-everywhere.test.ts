import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import express, { type NextFunction, type Request, type Response } from 'express';
import { body, validationResult } from 'express-validator';
import { Redis } from 'ioredis';
import { readFileSync } from 'node:fs';
import nodemailer from 'nodemailer';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { webProfiler, type WebProfiler } from '../src/index.js';
import { startProvider, type Provider } from './fixtures/ai-provider.js';
import { listen, readRows, tempDb, type Running } from './helpers.js';

const redisUrl = inject('redisUrl');

/**
 * Hidden once, hidden everywhere: one request hides an API key (its X-Api-Key header) and a
 * password (a body field named so), then places both on every other kind of record a profile
 * keeps. Made at run time, so that no code excerpt of this file holds them.
 */
const KEY = `k3y-${process.pid}-${Date.now().toString(36)}-A9`;
const PASSWORD = `pw-${process.pid}-Zq8`;

let server: Running;
let provider: Provider;
let profiler: WebProfiler;
let redis: Redis | undefined;
let database: string;

beforeAll(async () => {
  database = tempDb();
  provider = await startProvider();
  profiler = webProfiler({ database, aiContent: true, onError: () => {} });
  const tracer = new BasicTracerProvider({ spanProcessors: [profiler.spanProcessor()] }).getTracer('keys');
  const mailer = nodemailer.createTransport(profiler.mailTransport());
  const openai = new OpenAI({ baseURL: `${provider.url}/v1`, apiKey: 'sk-test-openai', maxRetries: 0 });
  if (redisUrl) redis = new Redis(redisUrl, { lazyConnect: true });
  await redis?.connect();
  const app = express();
  app.use(profiler);
  app.use(express.json());
  app.post('/keys', body('note').isLength({ max: 3 }), async (req: Request, _res: Response, next: NextFunction) => {
    try {
      const key = String(req.get('x-api-key'));
      const { password } = req.body as { password: string };
      req.log.info(`issued ${key} for ${password}`);
      console.log({ issued: key });
      tracer.startSpan('issue', { attributes: { 'key.issued': key, 'key.length': key.length } }).end();
      await redis?.set(`u:${key}`, 'ada');
      await redis?.del(`u:${key}`);
      await mailer.sendMail({ from: 'keys@example.test', to: 'ada@example.test', subject: `Your key ${key}`, text: `Use ${key} with the password ${password}.` });
      await openai.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `Summarise the account of key ${key}, please.` }] });
      const invalid = validationResult(req);
      next(Object.assign(new Error(`key ${key} refused`), { status: 422, command: { name: 'del', args: [`u:${key}`] }, parameters: [password], problems: invalid.array() }));
    } catch (err) {
      next(err);
    }
  });
  app.use(profiler.errorHandler);
  server = await listen(app);
});

afterAll(async () => {
  await server?.close();
  await provider?.close();
  redis?.disconnect();
  profiler?.close();
});

describe('hidden once, hidden everywhere', () => {
  it('a value hidden on one panel is in no other string of the profile, and the text around it stays', async () => {
    const res = await fetch(`${server.url}/keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': KEY, accept: 'application/json' },
      body: JSON.stringify({ password: PASSWORD, note: `see ${KEY}` }),
    });
    expect(res.status).toBe(422);
    const token = res.headers.get('x-debug-token')!;
    profiler.flush();

    const [row] = readRows(database).filter((r) => r.token === token);
    const c = row.collectors;
    // Where it is hidden first: the request's header and its body field.
    expect(c.request.headers['x-api-key']).toBe('[redacted]');
    // Everywhere else, cut out with the text around it kept.
    expect(c.logs.lines.map((l: { message: string }) => l.message)).toContain('issued [redacted] for [redacted]');
    if (redis) expect(JSON.stringify(c.cache)).toContain('u:[redacted]');
    expect(c.mail.messages[0].subject).toBe('Your key [redacted]');
    expect(c.mail.messages[0].text).toBe('Use [redacted] with the password [redacted].');
    expect(c.ai.calls[0].prompt).toContain('Summarise the account of key [redacted], please.');
    expect(c.exception.chain[0].message).toBe('key [redacted] refused');
    expect(JSON.stringify(c.exception.chain[0].details)).toContain('u:[redacted]');
    expect(JSON.stringify(c.performance)).toContain('"key.issued":"[redacted]"');

    // Nowhere: the SQLite file, every panel, the JSON twin, the exports.
    const file = readFileSync(database).toString('latin1') + readFileSync(`${database}-wal`, { flag: 'a+' }).toString('latin1');
    const twin = await (await fetch(`${server.url}/_profiler/${token}`, { headers: { accept: 'application/json' } })).text();
    const page = await (await fetch(`${server.url}/_profiler/${token}?panel=request`)).text();
    const curl = await (await fetch(`${server.url}/_profiler/${token}/curl`)).text();
    const test = await (await fetch(`${server.url}/_profiler/${token}/test?runner=node`)).text();
    for (const [where, text] of Object.entries({ file, rows: JSON.stringify(row), twin, page, curl, test })) {
      expect(text, where).not.toContain(KEY);
      expect(text, where).not.toContain(PASSWORD);
    }
    expect(twin).toContain('issued [redacted] for [redacted]');
  });
});
