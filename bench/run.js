// npm run bench: the profiler's cost, measured side by side in one run. Not part of npm test.
import autocannon from 'autocannon';
import { fork } from 'node:child_process';
import { mkdirSync, mkdtempSync, openSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ProfileStore } from '../dist/index.js';
import { PgProfileStore } from '../dist/storage/pg-store.js';
import { serialiseRecord } from '../dist/storage/profile.js';
import { recordOf } from '../dist/redaction/record.js';
import { factsOf } from '../dist/redaction/facts.js';
import { processConfig } from '../dist/recording/process-config.js';
import { resolveOptions } from '../dist/options.js';
import { startPostgres, startRedis } from '../test/servers.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const work = mkdtempSync(path.join(tmpdir(), 'wp-bench-'));
const quick = process.env.BENCH_QUICK === '1';
const ROUNDS = 3;
const CONNECTIONS = 50;
const scale = (n) => (quick ? Math.ceil(n / 10) : n);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const round = (x, d = 2) => Math.round(x * 10 ** d) / 10 ** d;

function startServer(mode, database, maxProfiles, schema, env) {
  // The debug exception page writes each 500's stack to stderr, as a dev server should: keep it out of the table.
  const log = openSync(path.join(work, 'server.log'), 'a');
  const child = fork(path.join(here, 'server.js'), [mode, database ?? '', String(maxProfiles ?? 1_000_000), ...(schema ? [schema] : [])], { execArgv: ['--expose-gc'], env: { ...process.env, ...env }, stdio: ['ignore', log, log, 'ipc'] });
  const ask = (type, answer) => new Promise((resolve) => {
    const on = (msg) => {
      if (msg.type === answer) {
        child.off('message', on);
        resolve(msg);
      }
    };
    child.on('message', on);
    child.send({ type });
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    // A server that cannot start (a missing build, a module that fails to load) says so in server.log.
    const died = (code) => reject(new Error(`the bench server exited (${code}) before it was ready: see ${path.join(work, 'server.log')}`));
    child.once('exit', died);
    child.once('message', () => child.off('exit', died));
    child.once('message', (msg) => resolve({
      url: `http://127.0.0.1:${msg.port}`,
      flush: () => ask('flush', 'flushed'),
      rss: () => ask('rss', 'rss'),
      cpu: async () => (await ask('cpu', 'cpu')).us,
      stop: () => new Promise((r) => {
        child.once('exit', r);
        child.send({ type: 'exit' });
      }),
    }));
  });
}

const ROUTES = {
  hello: { path: '/hello', method: 'GET' },
  realistic: {
    path: '/orders',
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ customer: 'c_42', items: [{ sku: 'A-1', qty: 2, price: 9.5 }, { sku: 'B-7', qty: 1, price: 24 }, { sku: 'C-3', qty: 5, price: 1.25 }] }),
  },
  inside: { path: '/inside', method: 'GET' },
};

/**
 * `seconds`: a fixed window, for rates (autocannon ends an `amount` run on its one-second tick,
 * which quantises rates). `amount`: an exact number of requests, for counting what got stored.
 */
async function load(url, route, { seconds, amount }) {
  const result = await autocannon({ url: url + route.path, method: route.method, headers: route.headers, body: route.body, connections: CONNECTIONS, ...(seconds ? { duration: seconds } : { amount }) });
  const answered = result['2xx'] + result.non2xx;
  return { rps: seconds ? answered / seconds : undefined, p99: result.latency.p99, answered, errors: result.errors + result.timeouts + result.non2xx };
}

/**
 * Alternating A/B rounds of the same app, bare and recorded; the ratio is the median of per-round
 * ratios. Then an exact number of requests against a fresh recorded server, to count what it stored.
 */
async function overhead(name, seconds, amount, pg, env) {
  const route = ROUTES[name];
  // The store: a SQLite file of the run's own, or a schema of its own in the run's PostgreSQL.
  const at = (what) => (pg ? [pg.url, undefined, `bench_${what.replace(/-/g, '_')}`] : [path.join(work, `${what}.sqlite`), undefined, undefined]);
  const bare = await startServer('bare', undefined, undefined, undefined, env);
  const recorded = await startServer('recorded', ...at(`${name}-rounds`), env);
  await load(bare.url, route, { amount: scale(5000) });
  await load(recorded.url, route, { amount: scale(5000) });
  const rounds = [];
  // The whole process's CPU per answered request (every thread: the request's, the writer, GC).
  const withCpu = async (server) => {
    const before = await server.cpu();
    const result = await load(server.url, route, { seconds });
    return { ...result, cpuUs: ((await server.cpu()) - before) / result.answered };
  };
  for (let i = 0; i < ROUNDS; i++) {
    const a = await withCpu(bare);
    const b = await withCpu(recorded);
    rounds.push({ bare: a, recorded: b, ratio: b.rps / a.rps });
  }
  await bare.stop();
  await recorded.stop();
  const counted = await startServer('recorded', ...at(name), env);
  const exact = await load(counted.url, route, { amount });
  const answeredRecorded = exact.answered;
  const stored = await counted.flush();
  await counted.stop();
  return {
    bareRps: round(median(rounds.map((r) => r.bare.rps)), 0),
    recordedRps: round(median(rounds.map((r) => r.recorded.rps)), 0),
    bareP99: median(rounds.map((r) => r.bare.p99)),
    recordedP99: median(rounds.map((r) => r.recorded.p99)),
    ratio: round(median(rounds.map((r) => r.ratio)), 3),
    bareCpuUs: round(median(rounds.map((r) => r.bare.cpuUs)), 0),
    recordedCpuUs: round(median(rounds.map((r) => r.recorded.cpuUs)), 0),
    errors: rounds.reduce((n, r) => n + r.bare.errors + r.recorded.errors, 0),
    answered: answeredRecorded,
    stored: stored.count,
    distinct: stored.distinct,
    bytesPerProfile: round(stored.bytes / Math.max(stored.count, 1), 0),
  };
}

/**
 * The cost of one captured query, HTTP call, pino line and winston line: n of each timed inside one request
 * of a bare and of a recorded server, alternately; the difference of the medians, per operation.
 */
async function perOperation(rounds) {
  const redis = await startRedis();
  const env = typeof redis === 'string' ? {} : { REDIS_URL: redis.url };
  const bare = await startServer('bare', undefined, undefined, undefined, env);
  const recorded = await startServer('recorded', path.join(work, 'micro.sqlite'), undefined, undefined, env);
  const time = async (server, what, n) => (await (await fetch(`${server.url}/micro/${what}?n=${n}`)).json()).ms;
  const out = {};
  if (typeof redis === 'string') out.redisMissing = redis;
  const measured = [['queries', 100], ['calls', 40], ['pino', 200], ['winston', 200], ...(typeof redis === 'string' ? [] : [['redis', 100]]), ['renders', 100], ['mails', 50], ['runs', 100], ['spans', 200], ['ai', 40], ['ai-sdk', 40]];
  for (const [what, n] of measured) {
    const a = [];
    const b = [];
    for (let i = 0; i < rounds + 3; i++) {
      const x = await time(bare, what, n);
      const y = await time(recorded, what, n);
      if (i >= 3) {
        a.push(x);
        b.push(y);
      }
    }
    out[what] = { n, bareUs: round((median(a) / n) * 1000, 1), recordedUs: round((median(b) / n) * 1000, 1), costUs: round(((median(b) - median(a)) / n) * 1000, 1) };
  }
  await bare.stop();
  await recorded.stop();
  if (typeof redis !== 'string') redis.stop();
  return out;
}

async function memory(requests) {
  const server = await startServer('recorded', path.join(work, 'memory.sqlite'));
  await load(server.url, ROUTES.hello, { amount: scale(5000) });
  await server.flush();
  const before = (await server.rss()).rss;
  await load(server.url, ROUTES.hello, { amount: requests });
  await server.flush();
  const after = (await server.rss()).rss;
  await server.stop();
  return { requests, before, after, growth: after - before };
}

async function retention(cap, requests) {
  const server = await startServer('recorded', path.join(work, 'retention.sqlite'), cap);
  await load(server.url, ROUTES.hello, { amount: requests });
  let stored = await server.flush();
  for (let i = 0; i < 60 && stored.count > cap; i++) stored = await server.flush();
  await server.stop();
  return { cap, requests, kept: stored.count, fileBytes: stored.fileBytes, usedBytes: stored.bytes };
}

/**
 * n profiles shaped like real ones, written through the store in batches of 1000 as the writer
 * thread does: into a SQLite file, or (pg) a schema of the run's PostgreSQL. Returns the
 * microseconds each profile took to write.
 */
async function seed(file, n, pg) {
  const store = pg ? new PgProfileStore({ url: pg.url, schema: 'bench_ui', max: 1 }) : ProfileStore.open(file);
  const write = (rows) => (pg ? store.insert(rows) : store.insertSerialised(rows));
  const options = resolveOptions({});
  const config = processConfig(true, undefined);
  const now = Date.now();
  const batch = [];
  let writing = 0;
  const timed = async () => {
    const t = performance.now();
    await write(batch.splice(0));
    writing += performance.now() - t;
  };
  for (let i = 0; i < n; i++) {
    // A capture as the request's thread hands it over, made a record as the writer thread does.
    const status = i % 17 === 0 ? 500 : i % 5 === 0 ? 404 : 200;
    const token = (0x100000 + i).toString(16);
    const time = now - (n - i) * 1000;
    const json = JSON.stringify({ id: i, total: 32.25 });
    const head = `HTTP/1.1 ${status} OK\r\nX-Powered-By: Express\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${json.length}\r\nX-Debug-Token: ${token}\r\nX-Debug-Token-Link: http://127.0.0.1:8000/_profiler/${token}\r\nX-Robots-Tag: noindex\r\nDate: ${new Date(time).toUTCString()}\r\n\r\n`;
    const { summary, record } = recordOf({
      size: 0, token, parent: null, time, duration: 3 + (i % 40), ttfb: 2.5, rss: 80_000_000, aborted: false,
      ip: `10.0.${(i >> 8) & 255}.${i & 255}`, origin: 'http://127.0.0.1:8000', method: i % 3 === 0 ? 'POST' : 'GET', url: `/api/orders/${i}?page=${i % 7}`, httpVersion: '1.1',
      rawHeaders: ['Host', '127.0.0.1:8000', 'User-Agent', 'bench', 'Accept', '*/*'], query: { page: String(i % 7) }, secure: false, remoteAddress: '10.0.0.1',
      status, statusMessage: 'OK', head, responseBody: { text: json, bytes: false, size: json.length }, route: '/api/orders/:id', params: { id: String(i) },
      trail: ['middleware\tjsonParser', 0.1, 'route\troute GET /api/orders/:id', 0.4, 'handler\tshowOrder', 0.5],
      logs: [{ time, level: 'info', message: 'order received', context: { items: 3 }, channel: 'app' }, { time, level: 'info', message: 'order priced', context: { total: 32.25 }, channel: 'app' }],
      // Two statements a request, as a page reading an order does: what the insights' statements card sums.
      inside: { queries: [
        { driver: 'better-sqlite3', sql: 'SELECT * FROM orders WHERE id = ?', params: [i], start: 0.5, end: 0.7, caller: '/app/orders.js:12' },
        { driver: 'better-sqlite3', sql: `SELECT * FROM lines WHERE order_id = ${i % 1000}`, params: [], start: 0.8, end: 1.1, caller: '/app/orders.js:19' },
      ], queryCount: 2, queryTime: 0.5, calls: [], callCount: 0, marks: [] },
      // One request in three made by one of 40 signed-in users: what the search's user filter reads.
      who: i % 3 === 0 ? { user: { id: i % 40, username: `user${i % 40}` } } : undefined,
    }, options);
    const row = serialiseRecord({ ...summary, type: 'request', instance: 'bench' }, record, config);
    // What the writer stores beside each profile for the insights page.
    row.insights = { since: 0, facts: factsOf(row.summary, record, 'request') };
    batch.push(row);
    if (batch.length === 1000) await timed();
  }
  if (batch.length) await timed();
  // What autovacuum does soon after a table grows: the planner's statistics for 100,000 rows.
  if (pg) await store.analyze();
  await store.close();
  return round((writing * 1000) / n, 1);
}

async function timed(url, headers, times) {
  const durations = [];
  for (let i = 0; i < times + 5; i++) {
    const res = await fetch(url, { headers });
    await res.arrayBuffer();
    if (res.status === 403) throw new Error(`${url} refused the bench (403): its access check`);
    const dur = /dur=([\d.]+)/.exec(res.headers.get('server-timing') ?? '');
    if (!dur) throw new Error(`no Server-Timing from ${url} (${res.status})`);
    if (i >= 5) durations.push(Number(dur[1]));
  }
  return { median: round(median(durations), 3), p95: round(pct(durations, 95), 3), p99: round(pct(durations, 99), 3) };
}

/** Server-Timing of pages read once each: `url(i)` for i = 0 … times - 1. */
async function timedUrls(url, headers, times) {
  const durations = [];
  for (let i = 0; i < times; i++) {
    const res = await fetch(url(i), { headers });
    await res.arrayBuffer();
    const dur = /dur=([\d.]+)/.exec(res.headers.get('server-timing') ?? '');
    if (!dur) throw new Error(`no Server-Timing from ${url(i)} (${res.status})`);
    durations.push(Number(dur[1]));
  }
  return { median: round(median(durations), 3), p95: round(pct(durations, 95), 3), p99: round(pct(durations, 99), 3) };
}

async function ui(n, pg) {
  const file = path.join(work, 'ui.sqlite');
  const writeUs = await seed(file, n, pg);
  // The bench reads the pages over loopback, as a developer on the machine does with trustLocal.
  const trusted = { WEB_PROFILER_TRUST_LOCAL: '1' };
  const server = pg ? await startServer('recorded', pg.url, undefined, 'bench_ui', trusted) : await startServer('recorded', file, undefined, undefined, trusted);
  const token = (0x100000 + Math.floor(n / 2)).toString(16);
  const html = { accept: 'text/html' };
  const now = Date.now();
  const out = {
    profiles: n,
    writeUs,
    list: await timed(`${server.url}/_profiler/`, html, 50),
    search: await timed(`${server.url}/_profiler/search?url=orders%2F4242&limit=50`, html, 50),
    searchUser: await timed(`${server.url}/_profiler/search?user=user7&limit=50`, html, 50),
    // Each first read counts a period anew (the end moves a millisecond a read); the second is kept for a few seconds.
    insights: await timedUrls((i) => `${server.url}/_profiler/insights?start=0&end=${now + 1000 + i}`, html, 20),
    insightsAgain: await timed(`${server.url}/_profiler/insights?start=0&end=${now + 1000}`, html, 50),
    profile: await timed(`${server.url}/_profiler/${token}?panel=request`, html, 200),
    notFoundPage: await timed(`${server.url}/no/such/page`, html, 200),
    exceptionPage: await timed(`${server.url}/boom`, html, 200),
  };
  await server.stop();
  return out;
}

/**
 * The host app's latency while a developer opens the mail panel of a request that sent 500 large
 * messages, every preview asked at once (a browser that loads every frame): /hello's median and
 * p95 then, against the same requests with no page read.
 */
async function mailPanel() {
  const server = await startServer('recorded', path.join(work, 'mail.sqlite'), undefined, undefined, { WEB_PROFILER_TRUST_LOCAL: '1' });
  const sent = await fetch(`${server.url}/newsletter`);
  const token = sent.headers.get('x-debug-token');
  await sent.text();
  await server.flush();
  const hello = async (n) => {
    const ms = [];
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      await (await fetch(`${server.url}/hello`)).text();
      ms.push(performance.now() - t);
    }
    return ms;
  };
  const idle = await hello(200);
  const page = (async () => {
    const t = performance.now();
    await (await fetch(`${server.url}/_profiler/${token}?panel=mail`)).text();
    await Promise.all(Array.from({ length: 500 }, async (_, i) => (await fetch(`${server.url}/_profiler/${token}/mail/${i + 1}`)).arrayBuffer()));
    return performance.now() - t;
  })();
  const during = [];
  let done = false;
  page.then(() => (done = true));
  while (!done) during.push(...(await hello(1)));
  const pageMs = await page;
  await server.stop();
  return { idle: { median: round(median(idle)), p95: round(pct(idle, 95)) }, during: { median: round(median(during)), p95: round(pct(during, 95)), max: round(Math.max(...during)), n: during.length }, pageMs: round(pageMs, 0) };
}

const started = Date.now();
const results = { machine: `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`, date: new Date().toISOString() };
// BENCH_ONLY=pages: the pages over 100,000 stored profiles only (SQLite and PostgreSQL), a few minutes.
const pagesOnly = process.env.BENCH_ONLY === 'pages';
if (!pagesOnly) {
  process.stdout.write('overhead, hello route…\n');
  results.hello = await overhead('hello', quick ? 1 : 5, scale(30_000));
  process.stdout.write('overhead, hello route, Express 4…\n');
  results.hello4 = await overhead('hello', quick ? 1 : 5, scale(30_000), undefined, { BENCH_EXPRESS: '4' });
  process.stdout.write('overhead, hello route, with the heapAndGc option…\n');
  results.helloHeap = await overhead('hello', quick ? 1 : 5, scale(30_000), undefined, { BENCH_HEAP_GC: '1' });
  process.stdout.write('overhead, realistic route…\n');
  results.realistic = await overhead('realistic', quick ? 1 : 5, scale(20_000));
  process.stdout.write('overhead, three queries and a fetch…\n');
  results.inside = await overhead('inside', quick ? 1 : 5, scale(20_000));
  process.stdout.write('per query and per call…\n');
  results.perOperation = await perOperation(quick ? 5 : 25);
  process.stdout.write('the host app while a 500-message mail panel loads…\n');
  results.mailPanel = await mailPanel();
  process.stdout.write('memory…\n');
  results.memory = await memory(scale(100_000));
  process.stdout.write('retention…\n');
  results.retention = await retention(quick ? 1_000 : 10_000, scale(30_000));
}
process.stdout.write('pages with 100,000 stored profiles…\n');
results.ui = await ui(scale(100_000));
// The shared store: the same measures against Debian's PostgreSQL, started for the run.
const pg = await startPostgres();
if (typeof pg === 'string') {
  results.pg = { missing: pg };
  process.stdout.write(`PostgreSQL store not measured: ${pg}\n`);
} else {
  try {
    if (!pagesOnly) process.stdout.write('PostgreSQL store: overhead, hello route…\n');
    const hello = pagesOnly ? undefined : await overhead('hello', quick ? 1 : 5, scale(30_000), pg);
    process.stdout.write('PostgreSQL store: pages with 100,000 stored profiles…\n');
    results.pg = { hello, ui: await ui(scale(100_000), pg) };
  } finally {
    pg.stop();
  }
}
results.seconds = Math.round((Date.now() - started) / 1000);

const MiB = (b) => `${round(b / 2 ** 20, 1)} MiB`;
const pageRows = () => [
  ['List page, 100k profiles: median / p95', `${results.ui.list.median} / ${results.ui.list.p95} ms`, '', '< 50 ms'],
  ['Search by URL substring: median / p95', `${results.ui.search.median} / ${results.ui.search.p95} ms`, '', '< 50 ms'],
  ['Search by user (one of 40 users, 833 of the 100k theirs): median / p95', `${results.ui.searchUser.median} / ${results.ui.searchUser.p95} ms`, '', '< 50 ms'],
  ['Profile page: median / p95 / p99', `${results.ui.profile.median} / ${results.ui.profile.p95} / ${results.ui.profile.p99} ms`, '', '< 20 ms'],
  ['Insights, 100k profiles, first read of a period: median / p95', `${results.ui.insights.median} / ${results.ui.insights.p95} ms`, '', '< 200 ms'],
  ['Insights, the same period again: median / p95', `${results.ui.insightsAgain.median} / ${results.ui.insightsAgain.p95} ms`, '', '< 50 ms'],
  ['Debug 404 page: median / p95', `${results.ui.notFoundPage.median} / ${results.ui.notFoundPage.p95} ms`, '', '< 2 ms'],
  ['Debug exception page, 3 causes: median / p95', `${results.ui.exceptionPage.median} / ${results.ui.exceptionPage.p95} ms`, '', '< 5 ms'],
  ...(results.pg.missing ? [['PostgreSQL store', 'not measured', results.pg.missing, '']] : [
    ['Writing a profile (batches of 1000): SQLite / PostgreSQL', `${results.ui.writeUs} / ${results.pg.ui.writeUs} µs`, '', ''],
    ['PostgreSQL list page, 100k profiles: median / p95', `${results.pg.ui.list.median} / ${results.pg.ui.list.p95} ms`, `SQLite ${results.ui.list.median}`, '< 50 ms'],
    ['PostgreSQL search by URL substring: median / p95', `${results.pg.ui.search.median} / ${results.pg.ui.search.p95} ms`, `SQLite ${results.ui.search.median}`, '< 50 ms'],
    ['PostgreSQL search by user: median / p95', `${results.pg.ui.searchUser.median} / ${results.pg.ui.searchUser.p95} ms`, `SQLite ${results.ui.searchUser.median}`, '< 50 ms'],
    ['PostgreSQL profile page: median / p95 / p99', `${results.pg.ui.profile.median} / ${results.pg.ui.profile.p95} / ${results.pg.ui.profile.p99} ms`, `SQLite ${results.ui.profile.median}`, '< 20 ms'],
    ['PostgreSQL insights, first read of a period: median / p95', `${results.pg.ui.insights.median} / ${results.pg.ui.insights.p95} ms`, `SQLite ${results.ui.insights.median}`, '< 200 ms'],
    ['PostgreSQL insights, the same period again: median / p95', `${results.pg.ui.insightsAgain.median} / ${results.pg.ui.insightsAgain.p95} ms`, `SQLite ${results.ui.insightsAgain.median}`, '< 50 ms'],
  ]),
];
const rows = pagesOnly ? pageRows() : [
  ['Throughput, hello: bare / recorded', `${results.hello.bareRps} / ${results.hello.recordedRps} req/s`, `ratio ${results.hello.ratio}`, '≥ 0.90'],
  ['p99 latency, hello: bare / recorded', `${results.hello.bareP99} / ${results.hello.recordedP99} ms`, '', ''],
  ['Whole-process CPU per request, hello: bare / recorded', `${results.hello.bareCpuUs} / ${results.hello.recordedCpuUs} µs`, `× ${round(results.hello.recordedCpuUs / results.hello.bareCpuUs)}`, '≤ 1.3 ×'],
  ['Whole-process CPU per request, hello, heapAndGc on: bare / recorded', `${results.helloHeap.bareCpuUs} / ${results.helloHeap.recordedCpuUs} µs`, `× ${round(results.helloHeap.recordedCpuUs / results.helloHeap.bareCpuUs)}`, ''],
  ['Throughput, hello, Express 4: bare / recorded', `${results.hello4.bareRps} / ${results.hello4.recordedRps} req/s`, `ratio ${results.hello4.ratio}`, '≥ 0.90'],
  ['Whole-process CPU per request, hello, Express 4', `${results.hello4.bareCpuUs} / ${results.hello4.recordedCpuUs} µs`, `× ${round(results.hello4.recordedCpuUs / results.hello4.bareCpuUs)}`, '≤ 1.3 ×'],
  ['Throughput, realistic: bare / recorded', `${results.realistic.bareRps} / ${results.realistic.recordedRps} req/s`, `ratio ${results.realistic.ratio}`, ''],
  ['p99 latency, realistic: bare / recorded', `${results.realistic.bareP99} / ${results.realistic.recordedP99} ms`, '', ''],
  ['Whole-process CPU per request, realistic: bare / recorded', `${results.realistic.bareCpuUs} / ${results.realistic.recordedCpuUs} µs`, `× ${round(results.realistic.recordedCpuUs / results.realistic.bareCpuUs)}`, ''],
  ['Throughput, 3 queries + 1 fetch: bare / recorded', `${results.inside.bareRps} / ${results.inside.recordedRps} req/s`, `ratio ${results.inside.ratio}`, ''],
  ['One better-sqlite3 query: bare / recorded', `${results.perOperation.queries.bareUs} / ${results.perOperation.queries.recordedUs} µs`, `+${results.perOperation.queries.costUs} µs`, ''],
  ['One loopback fetch: bare / recorded', `${results.perOperation.calls.bareUs} / ${results.perOperation.calls.recordedUs} µs`, `+${results.perOperation.calls.costUs} µs`, ''],
  ['One pino line: bare / recorded', `${results.perOperation.pino.bareUs} / ${results.perOperation.pino.recordedUs} µs`, `+${results.perOperation.pino.costUs} µs`, ''],
  ['One winston line: bare / recorded', `${results.perOperation.winston.bareUs} / ${results.perOperation.winston.recordedUs} µs`, `+${results.perOperation.winston.costUs} µs`, ''],
  results.perOperation.redis
    ? ['One Redis GET (ioredis, its channels): bare / recorded', `${results.perOperation.redis.bareUs} / ${results.perOperation.redis.recordedUs} µs`, `+${results.perOperation.redis.costUs} µs`, '']
    : ['One Redis GET', 'not measured', results.perOperation.redisMissing, ''],
  ['One ejs render (res.render path): bare / recorded', `${results.perOperation.renders.bareUs} / ${results.perOperation.renders.recordedUs} µs`, `+${results.perOperation.renders.costUs} µs`, ''],
  ['One profiler.run() unit (a command profile stored): bare call / recorded', `${results.perOperation.runs.bareUs} / ${results.perOperation.runs.recordedUs} µs`, `+${results.perOperation.runs.costUs} µs`, ''],
  ['One OpenTelemetry span: the app\'s provider alone / with profiler.spanProcessor()', `${results.perOperation.spans.bareUs} / ${results.perOperation.spans.recordedUs} µs`, `+${results.perOperation.spans.costUs} µs`, ''],
  ['One model call (openai SDK, loopback provider): bare / recorded', `${results.perOperation.ai.bareUs} / ${results.perOperation.ai.recordedUs} µs`, `+${results.perOperation.ai.costUs} µs`, ''],
  ['One model call (ai SDK generateText, loopback provider): bare / recorded', `${results.perOperation['ai-sdk'].bareUs} / ${results.perOperation['ai-sdk'].recordedUs} µs`, `+${results.perOperation['ai-sdk'].costUs} µs`, ''],
  ['One nodemailer message (streamTransport): bare / recorded', `${results.perOperation.mails.bareUs} / ${results.perOperation.mails.recordedUs} µs`, `+${results.perOperation.mails.costUs} µs`, ''],
  ['Host /hello while a 500-message mail panel and its previews load: median / p95 / max, idle median', `${results.mailPanel.during.median} / ${results.mailPanel.during.p95} / ${results.mailPanel.during.max} ms, idle ${results.mailPanel.idle.median} ms`, `page and previews ${results.mailPanel.pageMs} ms`, ''],
  ['Completeness, hello: answered / stored (distinct)', `${results.hello.answered} / ${results.hello.stored} (${results.hello.distinct})`, results.hello.answered === results.hello.distinct ? 'none lost' : 'MISMATCH', '0 lost'],
  ['Completeness, realistic: answered / stored (distinct)', `${results.realistic.answered} / ${results.realistic.stored} (${results.realistic.distinct})`, results.realistic.answered === results.realistic.distinct ? 'none lost' : 'MISMATCH', '0 lost'],
  ...pageRows(),
  ...(results.pg.missing ? [] : [
    ['PostgreSQL store, hello: bare / recorded', `${results.pg.hello.bareRps} / ${results.pg.hello.recordedRps} req/s`, `ratio ${results.pg.hello.ratio}`, `SQLite ${results.hello.ratio}`],
    ['PostgreSQL store, completeness: answered / stored', `${results.pg.hello.answered} / ${results.pg.hello.stored}`, results.pg.hello.answered === results.pg.hello.stored ? 'none lost' : 'MISMATCH', '0 lost'],
  ]),
  ['Bytes per profile: hello / realistic', `${results.hello.bytesPerProfile} / ${results.realistic.bytesPerProfile} B`, '', ''],
  [`Retention cap ${results.retention.cap} after ${results.retention.requests} requests`, `${results.retention.kept} kept, file ${MiB(results.retention.fileBytes)}`, '', `≤ ${results.retention.cap}`],
  [`RSS before / after ${results.memory.requests} requests`, `${MiB(results.memory.before)} / ${MiB(results.memory.after)}`, `growth ${MiB(results.memory.growth)}`, '< 64 MiB'],
];
const widths = [0, 1, 2, 3].map((i) => Math.max(...rows.map((r) => r[i].length), ['what', 'measured', 'result', 'target'][i].length));
const line = (r) => `| ${r.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
const table = [line(['what', 'measured', 'result', 'target']), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
process.stdout.write(`\n${results.machine}; ${results.seconds} s${quick ? ' (BENCH_QUICK: a tenth of the requests)' : ''}\n\n${table}\n`);
mkdirSync(path.join(here, 'results'), { recursive: true });
writeFileSync(path.join(here, 'results', 'latest.json'), `${JSON.stringify({ ...results, table }, null, 2)}\n`);
