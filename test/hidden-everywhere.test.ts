import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import express, { type NextFunction, type Request, type Response } from 'express';
import { celebrate, errors as celebrateErrors, Joi, Segments } from 'celebrate';
import { rateLimit } from 'express-rate-limit';
import { body, cookie, header, validationResult } from 'express-validator';
import { Redis } from 'ioredis';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import nodemailer from 'nodemailer';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { dump, webProfiler, type WebProfiler } from '../src/index.js';
import Database from './fixtures/better-sqlite3.cjs';
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
      dump({ issued: key, note: `with ${key}` }, 'the new key');
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
    expect(JSON.stringify(c.dumps)).toContain('"v":"with [redacted]"');

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

/**
 * The fourth audit's findings: values another panel hides kept by an error's own fields, by a
 * failed validation, by a rate limit's key or a strategy's user. Each is planted as the audit did;
 * none may reach the store.
 */
describe('what an error, a validation or a check was handed keeps nothing another panel hides', () => {
  const mysqlUrl = inject('mysqlUrl');
  const pgUrl = inject('pgUrl');
  const RESET = `5f0c${process.pid}a9e1b7c3d2f4e6a8b0c1d3e5f7a9b1c3`;
  const HASH = `$2b$10$${'N9qo8uLOickgx2ZMRZoMye'}IjZAgcfl7p92ldGxad68LJZdL17lh${process.pid % 10}`;
  const BOUND = `bound-secret-${process.pid}-q7`;
  const URL_KEY = `urlkey${process.pid}Zx81`;
  const PASSWORD = `hunter-${process.pid}-Pw`;
  const COOKIE = `cookie-${process.pid}-Cv`;
  const BASIC = Buffer.from(`ada:${PASSWORD}-basic`).toString('base64');
  const USER_TOKEN = `tok-${process.pid}-Ut4`;
  let db: string;
  let app: Running;
  let own: WebProfiler;
  let sequelize: { query(sql: string, options: object): Promise<unknown>; close(): Promise<void> } | undefined;
  let mysqlConnection: { query(sql: string, values: unknown[]): Promise<unknown>; end(): Promise<void> } | undefined;

  beforeAll(async () => {
    db = tempDb();
    own = webProfiler({ database: db, onError: () => {} });
    const require = createRequire(import.meta.url);
    const passport = require('passport');
    const { Sequelize } = require('sequelize');
    // On PostgreSQL where the run has one (its errors carry the bound values as `parameters`), else SQLite.
    sequelize = pgUrl ? new Sequelize(pgUrl, { logging: false }) : new Sequelize({ dialect: 'sqlite', storage: `${db}.app.sqlite`, logging: false });
    if (mysqlUrl) mysqlConnection = await (require('mysql2/promise') as { createConnection(url: string): Promise<NonNullable<typeof mysqlConnection>> }).createConnection(mysqlUrl);
    // A strategy that lets a token in and hands it on as the user (as an API-key strategy may).
    class TokenStrategy extends passport.Strategy {
      name = 'token';
      authenticate(this: { success(user: unknown, info: unknown): void; fail(message: string, status: number): void }, req: Request) {
        const token = String(req.get('x-token'));
        if (token.startsWith('tok-')) this.success(token, { message: `welcome ${token}` });
        else this.fail(`unknown token ${token}`, 401);
      }
    }
    passport.use(new TokenStrategy());
    const e = express();
    e.use(own);
    e.use(express.json());
    e.use(passport.initialize());
    e.get('/reset', async (_req, _res, next) => {
      // SET with both NX and XX: Redis refuses it, and ioredis hangs the command on its error.
      try {
        await (redis as unknown as { set(...args: string[]): Promise<unknown> }).set('reset:ada', RESET, 'NX', 'XX');
      } catch (err) {
        next(err);
      }
    });
    e.get('/bound', async (_req, _res, next) => {
      // Sequelize's error carries the statement and its bound values.
      await sequelize!.query('INSERT INTO accounts (email, password_hash) VALUES ($1, $2)', { bind: ['ada@example.test', BOUND] }).catch(next);
    });
    e.get('/inline', async (_req, _res, next) => {
      // mysql2 writes the values into the statement it quotes on its error.
      await mysqlConnection!.query('SELECT id FROM accounts WHERE password_hash = ?', [HASH]).catch(next);
    });
    e.get('/upstream', (_req, _res, next) => next(Object.assign(new Error('the upstream refused'), { config: { method: 'get', url: `https://maps.example.test/v1/geocode?key=${URL_KEY}&q=Paris` } })));
    e.post('/joi', celebrate({ [Segments.BODY]: Joi.object({ password: Joi.string().min(40) }) }), (_req, res) => res.send('ok'));
    e.post('/validated', body('password').isLength({ min: 40 }), (req: Request, res: Response) => {
      const result = validationResult(req);
      res.status(422).json({ errors: result.array() });
    });
    e.get('/session', cookie('session').isLength({ min: 100 }), header('x-session').isLength({ min: 100 }), (req: Request, res: Response) => {
      res.status(validationResult(req).isEmpty() ? 200 : 400).send('bad session');
    });
    e.get('/limited', rateLimit({ windowMs: 60_000, limit: 1, keyGenerator: (req) => String(req.get('authorization')), legacyHeaders: false, standardHeaders: false }), (_req, res) => res.send('within'));
    e.get('/me', passport.authenticate('token', { session: false }), (_req, res) => res.send('in'));
    e.use(celebrateErrors());
    e.use(own.errorHandler);
    app = await listen(e);
  });

  afterAll(async () => {
    await app?.close();
    await sequelize?.close();
    await mysqlConnection?.end();
    own?.close();
  });

  /** Everything the store holds, as the file and as the panels read from it. */
  const stored = () => {
    own.flush();
    return readFileSync(db).toString('latin1') + readFileSync(`${db}-wal`, { flag: 'a+' }).toString('latin1') + JSON.stringify(readRows(db));
  };
  const rowOf = (res: globalThis.Response) => readRows(db).find((r) => r.token === res.headers.get('x-debug-token'))!;

  it('M2: an error\'s own fields: ioredis\'s command arguments, Sequelize\'s bound values, mysql2\'s statement, a URL\'s key', async () => {
    const asked = [await fetch(`${app.url}/bound`), await fetch(`${app.url}/upstream`)];
    if (redis) asked.push(await fetch(`${app.url}/reset`));
    if (mysqlConnection) asked.push(await fetch(`${app.url}/inline`));
    for (const res of asked) expect(res.status).toBe(500);
    own.flush();
    const details = (res: globalThis.Response) => JSON.stringify(rowOf(res).collectors.exception.chain[0].details);
    expect(JSON.stringify(rowOf(asked[0]).collectors.db)).toContain('"[redacted]"');
    if (pgUrl) expect(details(asked[0])).toMatch(/"parameters":\["ada@example.test","\[redacted\]"\]/);
    expect(details(asked[1])).toContain('key=[redacted]&q=Paris');
    // Its value hidden as the cache panel hides a SET's; its options shown.
    if (redis) expect(details(asked[2])).toContain('"args":["reset:ada","?","NX","XX"]');
    if (mysqlConnection) expect(details(asked[3])).toContain("password_hash = '[redacted]'");
    const all = stored();
    for (const secret of [RESET, BOUND, URL_KEY, HASH]) expect(all).not.toContain(secret);
  });

  it('M3: a failed validation: joi\'s details, express-validator\'s own answer, a cookie\'s and a header\'s value', async () => {
    const json = { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify({ password: PASSWORD }) };
    const joi = await fetch(`${app.url}/joi`, json);
    expect(joi.status).toBe(400);
    const validated = await fetch(`${app.url}/validated`, json);
    expect(validated.status).toBe(422);
    // The app's own answer quotes the value: the client gets it, the store does not.
    expect(JSON.stringify(await validated.json())).toContain(PASSWORD);
    const session = await fetch(`${app.url}/session`, { headers: { cookie: `session=${COOKIE}`, 'x-session': `${COOKIE}-header` } });
    expect(session.status).toBe(400);
    own.flush();
    expect(JSON.stringify(rowOf(validated).collectors.response.body.json)).toContain('"value":"[redacted]","msg":"Invalid value","path":"password"');
    const fields = JSON.stringify(rowOf(session).collectors.security);
    expect(fields).toContain('"location":"cookies"');
    expect(fields).toContain('"location":"headers"');
    const all = stored();
    for (const secret of [PASSWORD, COOKIE]) expect(all).not.toContain(secret);
  });

  it('M4: a rate limit keyed by a credential, and a strategy whose user is the token', async () => {
    const basic = { authorization: `Basic ${BASIC}` };
    expect((await fetch(`${app.url}/limited`, { headers: basic })).status).toBe(200);
    const limited = await fetch(`${app.url}/limited`, { headers: basic });
    expect(limited.status).toBe(429);
    const admitted = await fetch(`${app.url}/me`, { headers: { 'x-token': USER_TOKEN } });
    expect(admitted.status).toBe(200);
    const refused = await fetch(`${app.url}/me`, { headers: { 'x-token': `bad-${USER_TOKEN}` } });
    expect(refused.status).toBe(401);
    own.flush();
    const check = (res: globalThis.Response) => rowOf(res).collectors.security.checks[0];
    expect(check(limited).fields.key).toBe('(a string, not an address: hidden)');
    expect(check(admitted).fields.user).toBe('(a string)');
    expect(check(admitted).fields.message).toBe('welcome [redacted]');
    expect(check(refused).reason).toBe('unknown token [redacted]');
    const all = stored();
    for (const secret of [BASIC, USER_TOKEN]) expect(all).not.toContain(secret);
  });
});

/** Redaction decides by what a name means, both ways: a secret under a harmless key is hidden, a harmless value under a secret-looking name is not. */
describe('a name read for what it means', () => {
  const TOKEN = `simplefin-${process.pid}-Tk9z`;
  let db: string;
  let app: Running;
  let own: WebProfiler;
  beforeAll(async () => {
    db = tempDb();
    own = webProfiler({ database: db, onError: () => {} });
    const store = new Database(`${db}.app.sqlite`);
    store.exec('CREATE TABLE settings (auth_method TEXT, data TEXT)');
    const e = express();
    e.use(own);
    e.use(express.json());
    e.post('/connect', (req, res) => {
      const { auth_method: method, accounts } = req.body as { auth_method: string; accounts: unknown[] };
      store.prepare('INSERT INTO settings (auth_method, data) VALUES (?, ?)').run(method, JSON.stringify(accounts));
      res.json({ rows: store.prepare("SELECT count(*) AS n FROM settings WHERE auth_method = 'password'").get() });
    });
    e.use(own.notFound);
    e.use(own.errorHandler);
    app = await listen(e);
  });
  afterAll(async () => {
    await app?.close();
    own?.close();
  });

  it('a `{ name, value }` pair named like a secret is hidden, in the body and a statement\'s JSON; `auth_method` keeps its value; the profile\'s own token shows', async () => {
    const res = await fetch(`${app.url}/connect`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ auth_method: 'password', accounts: [{ name: 'simplefin_token', value: TOKEN }] }) });
    expect(res.status).toBe(200);
    const missing = await fetch(`${app.url}/nowhere`, { headers: { accept: 'application/json' } });
    expect(missing.status).toBe(404);
    own.flush();
    const row = (r: globalThis.Response) => readRows(db).find((x) => x.token === r.headers.get('x-debug-token'))!;
    const c = row(res).collectors;
    expect(c.request.body.json).toEqual({ auth_method: 'password', accounts: [{ name: 'simplefin_token', value: '[redacted]' }] });
    const [insert, select] = c.db.queries;
    expect(insert.params).toEqual(['password', '[{"name":"simplefin_token","value":"[redacted]"}]']);
    expect(select.sql).toContain("auth_method = 'password'");
    // The profiler's own answer names the profile by its token: shown, not taken for a secret.
    expect(row(missing).collectors.response.body.json.token).toBe(missing.headers.get('x-debug-token'));
    expect(readFileSync(db).toString('latin1') + JSON.stringify(readRows(db))).not.toContain(TOKEN);
  });
});
