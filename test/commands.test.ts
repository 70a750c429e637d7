import Database from './fixtures/better-sqlite3.cjs';
import { readFileSync } from 'node:fs';
import { Queue } from 'bullmq';
import express from 'express';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { logger, webProfiler } from '../src/index.js';
import { burnPrimes, listen, readRows, tempDb, type Running } from './helpers.js';

const root = path.resolve(import.meta.dirname, '..');
const fixture = (name: string) => path.join(root, 'test', 'fixtures', 'commands', name);
const json = async (url: string) => (await fetch(url, { headers: { accept: 'application/json' } })).json();

const printed = new WeakMap<ChildProcess, { out: string; waiters: Set<() => void> }>();

/**
 * A child process's stdout, until a line matches. All it printed since the first call is kept and searched:
 * a job can finish between the request that queued it and the wait for its line.
 */
function waitFor(child: ChildProcess, pattern: RegExp, timeout = 20_000): Promise<RegExpExecArray> {
  let seen = printed.get(child);
  if (!seen) {
    const state = { out: '', waiters: new Set<() => void>() };
    child.stdout!.on('data', (chunk: Buffer) => {
      state.out += chunk.toString();
      for (const check of state.waiters) check();
    });
    printed.set(child, (seen = state));
  }
  const state = seen;
  return new Promise((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      state.waiters.delete(check);
      child.off('exit', exited);
    };
    const check = () => {
      const m = pattern.exec(state.out);
      if (m) {
        done();
        resolve(m);
      }
    };
    const exited = (code: number | null) => {
      done();
      reject(new Error(`exited ${code} before ${pattern}; stdout: ${state.out}`));
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`no ${pattern} in ${timeout} ms; stdout: ${state.out}`));
    }, timeout);
    state.waiters.add(check);
    child.on('exit', exited);
    check();
  });
}

const ended = (child: ChildProcess) => new Promise<number | null>((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.on('exit', resolve)));

describe('profiler.run', () => {
  let server: Running;
  let database: string;
  let profiler: ReturnType<typeof webProfiler>;
  const db = new Database(':memory:');
  db.exec("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total INTEGER); INSERT INTO invoices (total) VALUES (120), (80)");

  beforeAll(async () => {
    database = tempDb();
    profiler = webProfiler({ database, onError: () => {} });
    const app = express();
    app.use(profiler);
    app.get('/close-month', async (_req, res) => {
      const total = await profiler.run('close month', async () => {
        await new Promise((resolve) => setTimeout(resolve, 2));
        return (db.prepare('SELECT sum(total) AS total FROM invoices').get() as { total: number }).total;
      });
      res.json({ total });
    });
    server = await listen(app);
  });
  afterAll(async () => {
    await server?.close();
    profiler?.close();
  });

  it('records a job that logs and one that throws as command profiles, the failure on its exception panel', async () => {
    const total = await profiler.run('send reminders', async () => {
      const due = db.prepare('SELECT * FROM invoices WHERE total > ?').all(100);
      logger.info('reminders due', { count: due.length });
      console.warn('one customer has no address');
      return due.length;
    });
    expect(total).toBe(1);
    // Synchronous work, and an error that passes on untouched.
    expect(profiler.run({ name: 'sync step' }, () => 7)).toBe(7);
    const thrown = await profiler.run('charge cards', async () => {
      db.prepare('SELECT id FROM invoices').all();
      throw new RangeError('card 4242 declined for invoice 2');
    }).catch((err: unknown) => err);
    expect(thrown).toBeInstanceOf(RangeError);
    profiler.flush();

    const rows = readRows(database);
    const reminders = rows.find((r) => r.url === 'send reminders')!;
    expect(reminders).toMatchObject({ type: 'command', method: 'RUN', status: 0, parent: null });
    expect(reminders.collectors.command).toMatchObject({ kind: 'run', name: 'send reminders', exitCode: 0 });
    expect(reminders.collectors.db.queries[0]).toMatchObject({ sql: 'SELECT * FROM invoices WHERE total > ?', rows: 1 });
    expect(reminders.collectors.db.queries[0].caller).toMatch(/commands\.test\.ts:\d+$/);
    expect(reminders.collectors.logs.lines.map((l: { level: string; message: string }) => `${l.level} ${l.message}`)).toEqual(['info reminders due', 'warn one customer has no address']);
    expect(reminders.collectors.request).toBeUndefined();
    expect(rows.find((r) => r.url === 'sync step')).toMatchObject({ status: 0, type: 'command' });

    const charge = rows.find((r) => r.url === 'charge cards')!;
    expect(charge).toMatchObject({ type: 'command', status: 1 });
    expect(charge.collectors.exception.chain[0]).toMatchObject({ class: 'RangeError', message: 'card 4242 declined for invoice 2' });
    expect(charge.collectors.exception.chain[0].frames.find((f: { kind: string }) => f.kind === 'app').file).toMatch(/commands\.test\.ts$/);

    // Listed under type=command, with what they are; the HTML list says how each ended.
    const listed = await json(`${server.url}/_profiler/search?type=command`);
    expect(listed.profiles.map((p: { url: string }) => p.url)).toEqual(expect.arrayContaining(['send reminders', 'charge cards', 'sync step']));
    expect(listed.profiles.every((p: { type: string }) => p.type === 'command')).toBe(true);
    const page = await (await fetch(`${server.url}/_profiler/search?type=command`)).text();
    expect(page).toContain('exit 1');
    expect(page).toContain('charge cards');
    // Its page opens on the exception; the command panel says what ran; request panels are not offered.
    const profilePage = await (await fetch(`${server.url}/_profiler/${charge.token}`)).text();
    expect(profilePage).toContain('card 4242 declined for invoice 2');
    expect(profilePage).not.toContain('panel=request&');
    const command = await (await fetch(`${server.url}/_profiler/${charge.token}?panel=command&type=command`)).text();
    expect(command).toContain('Exit code');
    expect(command).toContain('charge cards');
    expect((await fetch(`${server.url}/_profiler/${charge.token}?panel=request`)).status).toBe(404);
  });

  it('links a run started inside a request to it, both ways', async () => {
    const res = await fetch(`${server.url}/close-month`);
    expect(await res.json()).toEqual({ total: 200 });
    const token = res.headers.get('x-debug-token')!;
    profiler.flush();
    const run = readRows(database).find((r) => r.url === 'close month')!;
    expect(run).toMatchObject({ type: 'command', parent: token });
    expect(run.collectors.db.count).toBe(1);
    // The request's own db panel does not hold the run's statement.
    const request = readRows(database).find((r) => r.token === token)!;
    expect(request.collectors.db).toBeUndefined();
    const requestPage = await (await fetch(`${server.url}/_profiler/${token}`)).text();
    expect(requestPage).toContain(`href="/_profiler/${run.token}"`);
    const runPage = await (await fetch(`${server.url}/_profiler/${run.token}`)).text();
    expect(runPage).toMatch(new RegExp(`Started by</dt><dd><a href="/_profiler/${token}"`));
    expect((await json(`${server.url}/_profiler/search?parent=${token}`)).profiles.map((p: { token: string }) => p.token)).toEqual([run.token]);
  });

  it('records a CPU profile of a run that asks for one', async () => {
    // A fixed amount of work (about 75 ms idle), not a time: a busy machine makes it take longer, and sampled more, never less.
    await profiler.run({ name: 'rebuild index', cpu: true }, async () => burnPrimes(300));
    profiler.flush();
    const cpu = readRows(database).find((r) => r.url === 'rebuild index')!.collectors.cpu;
    expect(cpu.samples).toBeGreaterThan(10);
    expect(cpu.functions.map((f: { name: string }) => f.name)).toContain('burnPrimes');
  });

  it('stores the trace a client names in traceparent, searchable by trace_id', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const res = await fetch(`${server.url}/close-month`, { headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } });
    const token = res.headers.get('x-debug-token')!;
    profiler.flush();
    const found = await json(`${server.url}/_profiler/search?trace_id=${traceId}`);
    expect(found.profiles.map((p: { token: string; trace: string }) => [p.token, p.trace])).toEqual([[token, traceId]]);
    expect((await fetch(`${server.url}/_profiler/search?trace_id=nope`)).status).toBe(400);
  });
});

/** The shapes secrets take on command lines, each with a value found nowhere else. */
const SECRET_ARGS = ['-p', 'mysql-pw-1', '-pattached-pw-2', '-u', 'ada:curl-pw-3', '--token', '-dash-pw-4', '--db', 'postgres://ada:url-pw-5@localhost/books'];

describe('scripts run with the register hook', () => {
  const run = (loader: '--require' | '--import', how: string, database: string) =>
    spawnSync(process.execPath, [loader, 'express-web-profiler/register', fixture('script.cjs'), how, '--password', 'hunter2', '--month=11', ...SECRET_ARGS], {
      cwd: root,
      env: { ...process.env, WEB_PROFILER_DB: database },
      encoding: 'utf8',
      timeout: 30_000,
    });

  it('records the whole process as one command profile: queries, logs, exit code, redacted arguments', () => {
    const database = tempDb();
    const result = run('--import', 'exit1', database);
    expect(result.status).toBe(1);
    // The process writes what it would bare: the profiler adds nothing to its output.
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe('mailing failed for 1 invoice\n');
    const [profile, ...others] = readRows(database);
    expect(others).toEqual([]);
    expect(profile).toMatchObject({ type: 'command', method: 'SCRIPT', url: 'test/fixtures/commands/script.cjs', status: 1 });
    expect(profile.collectors.command).toMatchObject({ kind: 'script', exitCode: 1, argv: [
      'exit1', '--password', '[redacted]', '--month=11',
      '-p', '[redacted]', '-p[redacted]', '-u', 'ada:[redacted]', '--token', '[redacted]', '--db', 'postgres://ada:[redacted]@localhost/books',
    ] });
    const stored = readFileSync(database).toString('latin1');
    for (const secret of ['hunter2', 'mysql-pw-1', 'attached-pw-2', 'curl-pw-3', 'dash-pw-4', 'url-pw-5']) expect(stored, secret).not.toContain(secret);
    expect(profile.collectors.db.queries.map((q: { sql: string }) => q.sql)).toEqual([
      'CREATE TABLE invoices (id INTEGER PRIMARY KEY, total INTEGER)',
      'INSERT INTO invoices (total) VALUES (?)',
      'SELECT * FROM invoices WHERE total > ?',
    ]);
    expect(profile.collectors.db.queries[2].caller).toMatch(/script\.cjs:9$/);
    expect(profile.collectors.logs.lines.map((l: { level: string; message: string }) => `${l.level} ${l.message}`)).toEqual(['info invoices due', 'error mailing failed for 1 invoice']);
  });

  it('records an uncaught exception (CommonJS hook) and a SIGTERM', async () => {
    const database = tempDb();
    const thrown = run('--require', 'throw', database);
    expect(thrown.status).toBe(1);
    expect(thrown.stderr).toContain('TypeError: invoice 1 has no customer');
    const [failed] = readRows(database);
    expect(failed).toMatchObject({ type: 'command', status: 1 });
    expect(failed.collectors.exception.chain[0]).toMatchObject({ class: 'TypeError', message: 'invoice 1 has no customer' });

    const child = spawn(process.execPath, ['--require', 'express-web-profiler/register', fixture('script.cjs'), 'signal'], { cwd: root, env: { ...process.env, WEB_PROFILER_DB: database } });
    await waitFor(child, /waiting/);
    child.kill('SIGTERM');
    await ended(child);
    expect(child.signalCode).toBe('SIGTERM');
    const signalled = readRows(database).find((r) => r.token !== failed.token)!;
    expect(signalled).toMatchObject({ status: 143 });
    expect(signalled.collectors.command).toMatchObject({ signal: 'SIGTERM', exitCode: 143 });
  });
});

const redisUrl = inject('redisUrl');
if (!redisUrl) process.stderr.write(`\n!!! BULLMQ TESTS SKIPPED: ${inject('redisMissing')}\n\n`);

describe.skipIf(!redisUrl)('BullMQ', () => {
  let server: Running;
  let database: string;
  let profiler: ReturnType<typeof webProfiler>;
  let queue: Queue;
  let worker: ChildProcess;
  const name = `mail-${process.pid}`;
  const RESET_TOKEN = 'job-reset-9c41d2e7b0';

  beforeAll(async () => {
    database = tempDb();
    profiler = webProfiler({ database, onError: () => {} });
    const url = new URL(redisUrl!);
    queue = new Queue(name, { connection: { host: url.hostname, port: Number(url.port) }, telemetry: profiler.bullmq() });
    const app = express();
    app.use(profiler);
    app.post('/signup', async (req, res) => {
      const job = await queue.add('welcome', { user: 1, fail: req.query.fail === '1', resetLink: `https://app.test/reset/${RESET_TOKEN}` }, { attempts: 2, backoff: { type: 'fixed', delay: 20 } });
      res.status(201).json({ job: job.id });
    });
    server = await listen(app);
    worker = spawn(process.execPath, [fixture('worker.cjs')], { cwd: root, env: { ...process.env, WEB_PROFILER_DB: database, REDIS_URL: redisUrl, QUEUE: name } });
    worker.stderr!.on('data', (chunk: Buffer) => process.stderr.write(chunk));
    await waitFor(worker, /ready/);
  });
  afterAll(async () => {
    if (worker && worker.exitCode === null) {
      worker.kill('SIGTERM');
      await ended(worker);
    }
    await queue?.obliterate({ force: true }).catch(() => {});
    await queue?.close();
    await server?.close();
    profiler?.close();
  });

  it('profiles each job in the worker, linked both ways to the request that queued it, failed attempts with their exception', async () => {
    const ok = await fetch(`${server.url}/signup`, { method: 'POST' });
    const okJob = (await ok.json()).job;
    const okToken = ok.headers.get('x-debug-token')!;
    await waitFor(worker, new RegExp(`completed ${okJob}\\b`));
    const bad = await fetch(`${server.url}/signup?fail=1`, { method: 'POST' });
    const badJob = (await bad.json()).job;
    const badToken = bad.headers.get('x-debug-token')!;
    await waitFor(worker, new RegExp(`failed ${badJob} 2\\b`));
    // The worker writes its profiles as it closes.
    worker.kill('SIGTERM');
    await ended(worker);
    profiler.flush();

    const rows = readRows(database);
    const jobs = rows.filter((r) => r.method === 'JOB');
    const done = jobs.filter((r) => r.parent === okToken);
    expect(done).toHaveLength(1);
    expect(done[0]).toMatchObject({ type: 'command', status: 0, url: `${name}:welcome #${okJob}` });
    expect(done[0].collectors.command.job).toMatchObject({ queue: name, id: okJob, name: 'welcome', attempt: 1, attempts: 2 });
    expect(done[0].collectors.db.queries.map((q: { sql: string }) => q.sql)).toContain('SELECT email FROM users WHERE id = ?');
    expect(done[0].collectors.logs.lines.map((l: { message: string }) => l.message)).toContain('sending welcome mail');

    const attempts = jobs.filter((r) => r.parent === badToken).sort((a, b) => a.collectors.command.job.attempt - b.collectors.command.job.attempt);
    expect(attempts.map((a) => [a.status, a.collectors.command.job.attempt])).toEqual([[1, 1], [1, 2]]);
    expect(attempts[1].collectors.exception.chain[0]).toMatchObject({ class: 'Error', message: 'SMTP refused the welcome mail to ada@example.test' });
    expect(attempts[1].collectors.exception.chain[0].frames.find((f: { kind: string }) => f.kind === 'app').file).toMatch(/worker\.cjs$/);

    // The request's side: the job on its jobs panel and timeline, its runs linked.
    const request = rows.find((r) => r.token === badToken)!;
    // The job's data went to Redis as a script's argument: its cache panel shows the script's keys, never the data.
    const scripts = request.collectors.cache.commands.filter((c: { command: string }) => /^EVAL/i.test(c.command));
    expect(scripts.length).toBeGreaterThan(0);
    expect(scripts.some((c: { args: string[] }) => c.args.includes('?'))).toBe(true);
    expect(JSON.stringify(rows.filter((r) => r.method !== 'JOB'))).not.toContain(RESET_TOKEN);
    expect(request.collectors.jobs.jobs[0]).toMatchObject({ queue: name, name: 'welcome', ids: [badJob] });
    expect(request.collectors.jobs.jobs[0].caller).toMatch(/commands\.test\.ts:\d+$/);
    expect(request.collectors.performance.timeline.some((t: { kind: string; name: string }) => t.kind === 'job' && t.name === `queue ${name} welcome #${badJob}`)).toBe(true);
    const panel = await (await fetch(`${server.url}/_profiler/${badToken}?panel=jobs`)).text();
    for (const a of attempts) expect(panel).toContain(`href="/_profiler/${a.token}"`);
    const jobPage = await (await fetch(`${server.url}/_profiler/${attempts[1].token}?panel=command&type=command`)).text();
    expect(jobPage).toMatch(new RegExp(`Queued by</dt><dd><a href="/_profiler/${badToken}"`));
    expect(jobPage).toContain('2 of 2');
  });
});

describe('OpenTelemetry', () => {
  let app: ChildProcess;
  let base: string;
  let database: string;

  beforeAll(async () => {
    database = tempDb();
    app = spawn(process.execPath, [fixture('otel-app.cjs')], { cwd: root, env: { ...process.env, WEB_PROFILER_DB: database } });
    app.stderr!.on('data', (chunk: Buffer) => process.stderr.write(chunk));
    base = `http://127.0.0.1:${(await waitFor(app, /listening (\d+)/))[1]}`;
  });
  afterAll(async () => {
    if (app && app.exitCode === null) {
      app.kill('SIGTERM');
      await ended(app);
    }
  });

  it('shows a span started in a handler on the timeline, stores the trace id, and shows no http or express span twice', async () => {
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const res = await fetch(`${base}/invoice/42`, { headers: { traceparent: `00-${traceId}-b7ad6b7169203331-01` } });
    // The app's own http instrumentation continued the client's trace: the profile names the same.
    expect(await res.json()).toEqual({ total: 120, trace: traceId });
    const token = res.headers.get('x-debug-token')!;
    await fetch(`${base}/invoice/7`);

    const profile = await json(`${base}/_profiler/${token}`);
    expect(profile.trace).toBe(traceId);
    const traced = profile.collectors.performance.traced;
    expect(traced).toEqual([expect.objectContaining({ name: 'compute invoice', scope: 'billing', attributes: { 'invoice.id': 42, 'payment.api_key': '[redacted]' } })]);
    expect(profile.collectors.performance.timeline.filter((t: { kind: string }) => t.kind === 'span').map((t: { name: string }) => t.name)).toEqual(['compute invoice']);
    expect(profile.collectors.db.queries).toEqual([expect.objectContaining({ driver: 'mongodb', sql: 'invoices.find({ id: ? })' })]);
    expect(profile.collectors.http_client).toBeUndefined();

    const found = await json(`${base}/_profiler/search?trace_id=${traceId}`);
    expect(found.profiles.map((p: { token: string }) => p.token)).toEqual([token]);
    const page = await (await fetch(`${base}/_profiler/${token}?panel=performance`)).text();
    expect(page).toContain(`href="http://jaeger.example.test:16686/trace/${traceId}"`);
    expect(page).not.toContain('sk_live_abcdef123456');
    // A request the app traced on its own: a trace of its own, stored.
    const other = (await json(`${base}/_profiler/search?url=/invoice/7`)).profiles[0];
    expect(other.trace).toMatch(/^[0-9a-f]{32}$/);
    expect(other.trace).not.toBe(traceId);
  });
});
