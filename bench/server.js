// A benchmark subject: the same Express app, bare or recorded, in its own process.
// argv: <bare|recorded> <database: a SQLite file or a postgres:// URL> <maxProfiles> [schema]; env BENCH_EXPRESS=4 for Express 4. Talks to the runner over IPC.
import Database from 'better-sqlite3';
import express5 from 'express';
import express4 from 'express4';
import http from 'node:http';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import ejs from 'ejs';
import { Redis } from 'ioredis';
import nodemailer from 'nodemailer';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { generateText } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import pino from 'pino';
import winston from 'winston';
import { webProfiler } from '../dist/index.js';
import { profilerTransport } from '../dist/instruments/winston.js';

const [mode, database, maxProfiles = '1000000', schema = 'web_profiler'] = process.argv.slice(2);
// BENCH_EXPRESS=4: the same app on Express 4.
const express = process.env.BENCH_EXPRESS === '4' ? express4 : express5;
const app = express();
const profiler = mode === 'recorded'
  ? webProfiler({ database, schema, maxProfiles: Number(maxProfiles), maxAge: 365 * 24 * 3600 * 1000, heapAndGc: process.env.BENCH_HEAP_GC === '1', onError: (m) => process.stderr.write(`[bench server] ${m}\n`) })
  : undefined;
if (profiler) app.use(profiler);
app.use(express.json());

app.get('/hello', (_req, res) => res.send('Hello World!'));

// The realistic route: JSON in, two log lines, JSON out.
app.post('/orders', (req, res) => {
  req.log?.info('order received', { items: req.body.items.length });
  const total = req.body.items.reduce((sum, item) => sum + item.price * item.qty, 0);
  req.log?.info('order priced', { total });
  res.status(201).json({ id: 'ord_1234', total, items: req.body.items.length, status: 'accepted' });
});

// The app's own database and an upstream service on loopback (a plain server: its answers are not recorded).
const db = new Database(':memory:');
db.exec('CREATE TABLE products (sku TEXT PRIMARY KEY, price REAL, stock INTEGER); CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT, total REAL)');
const addProduct = db.prepare('INSERT INTO products VALUES (?, ?, ?)');
for (let i = 0; i < 100; i++) addProduct.run(`SKU-${i}`, 1 + i / 10, 50);
const upstream = http.createServer((_req, res) => res.end('{"rate":1.08}'));
await new Promise((resolve) => upstream.listen(0, '127.0.0.1', resolve));
const upstreamUrl = `http://127.0.0.1:${upstream.address().port}/rates`;

// Three queries and one loopback fetch: a route that reads, calls a service, writes.
const findProduct = db.prepare('SELECT price, stock FROM products WHERE sku = ?');
const countOrders = db.prepare('SELECT count(*) AS n FROM orders WHERE customer = ?');
const addOrder = db.prepare('INSERT INTO orders (customer, total) VALUES (?, ?)');
app.get('/inside', async (_req, res) => {
  const product = findProduct.get('SKU-42');
  const { rate } = await (await fetch(upstreamUrl)).json();
  const { n } = countOrders.get('c_42');
  addOrder.run('c_42', product.price * rate);
  res.json({ price: product.price * rate, orders: n + 1 });
});

// What one captured query and one captured call cost: n of them timed inside a request, bare or recorded.
app.get('/micro/queries', (req, res) => {
  const n = Number(req.query.n);
  const started = performance.now();
  for (let i = 0; i < n; i++) findProduct.get(`SKU-${i % 100}`);
  res.json({ ms: performance.now() - started });
});
app.get('/micro/calls', async (req, res) => {
  const n = Number(req.query.n);
  const started = performance.now();
  for (let i = 0; i < n; i++) await (await fetch(upstreamUrl)).arrayBuffer();
  res.json({ ms: performance.now() - started });
});

// A cache command on Debian's redis-server (REDIS_URL, started by the runner), a render, a message sent.
const redis = process.env.REDIS_URL ? new Redis(process.env.REDIS_URL) : undefined;
if (redis) await redis.set('bench:status', 'green');
app.get('/micro/redis', async (req, res) => {
  const n = Number(req.query.n);
  const started = performance.now();
  for (let i = 0; i < n; i++) await redis.get('bench:status');
  res.json({ ms: performance.now() - started });
});
const views = path.join(path.dirname(fileURLToPath(import.meta.url)), 'views');
app.set('views', views);
app.set('view engine', 'ejs');
app.engine('ejs', ejs.__express);
const renderOnce = (locals) => new Promise((resolve, reject) => app.render('page', locals, (err, html) => (err ? reject(err) : resolve(html))));
app.get('/micro/renders', async (req, res) => {
  const n = Number(req.query.n);
  const started = performance.now();
  for (let i = 0; i < n; i++) await renderOnce({ title: 'Orders', items: [1, 2, 3] });
  res.json({ ms: performance.now() - started });
});
const mailer = nodemailer.createTransport({ streamTransport: true, buffer: true });
app.get('/micro/mails', async (req, res) => {
  const n = Number(req.query.n);
  const started = performance.now();
  for (let i = 0; i < n; i++) await mailer.sendMail({ from: 'shop@example.test', to: 'ada@example.test', subject: 'Your order', text: 'Thank you for your order.', html: '<p>Thank you for your <b>order</b>.</p>' });
  res.json({ ms: performance.now() - started });
});

// A model call through the openai SDK (and the ai SDK's), to a provider on loopback answering a chat completion at once.
const completion = JSON.stringify({ id: 'c1', object: 'chat.completion', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' }], usage: { prompt_tokens: 12, completion_tokens: 2, total_tokens: 14 } });
const provider = http.createServer((req, res) => req.resume().on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(completion)));
await new Promise((resolve) => provider.listen(0, '127.0.0.1', resolve));
const providerUrl = `http://127.0.0.1:${provider.address().port}/v1`;
const openai = new OpenAI({ baseURL: providerUrl, apiKey: 'sk-bench', maxRetries: 0 });
// Loaded, not called: the instruments of both are in place for every route.
void Anthropic;
const aiModel = createOpenAI({ baseURL: providerUrl, apiKey: 'sk-bench' }).chat('gpt-4o-mini');
// A newsletter run in one request: 500 messages of 64 KiB text and HTML each (see the mail panel row).
app.get('/newsletter', async (_req, res) => {
  const body = 'x'.repeat(64 * 1024);
  for (let i = 0; i < 500; i++) await mailer.sendMail({ from: 'news@example.test', to: `reader${i}@example.test`, subject: `Issue ${i}`, text: body, html: `<p>${body}</p>` });
  res.send('sent');
});

app.get('/micro/ai', async (req, res) => {
  const n = Number(req.query.n);
  const started = performance.now();
  for (let i = 0; i < n; i++) await openai.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello' }] });
  res.json({ ms: performance.now() - started });
});
app.get('/micro/ai-sdk', async (req, res) => {
  const n = Number(req.query.n);
  const started = performance.now();
  for (let i = 0; i < n; i++) await generateText({ model: aiModel, prompt: 'Say hello' });
  res.json({ ms: performance.now() - started });
});

// A unit of work as a command (profiler.run: a profile of its own, stored), bare: the same async call.
app.get('/micro/runs', async (req, res) => {
  const n = Number(req.query.n);
  const unit = async () => findProduct.get('SKU-1');
  const started = performance.now();
  for (let i = 0; i < n; i++) await (profiler ? profiler.run('reprice', unit) : unit());
  res.json({ ms: performance.now() - started });
});

// An OpenTelemetry span the app makes, with the app's own provider: bare, no processor; recorded, the profiler's.
// Set up on first use: the provider's context manager must not weigh on the other routes' processes.
let tracer;
app.get('/micro/spans', async (req, res) => {
  if (tracer === undefined) {
    const { NodeTracerProvider } = await import('@opentelemetry/sdk-trace-node');
    const { trace } = await import('@opentelemetry/api');
    new NodeTracerProvider({ spanProcessors: profiler ? [profiler.spanProcessor()] : [] }).register();
    tracer = trace.getTracer('bench');
  }
  const n = Number(req.query.n);
  const started = performance.now();
  for (let i = 0; i < n; i++) tracer.startActiveSpan('price step', (span) => {
    span.setAttribute('order', i);
    span.end();
  });
  res.json({ ms: performance.now() - started });
});

// Loggers writing to a destination that drops what it is given: what is timed is the logging, and the capture.
const discard = { write() {} };
const plog = pino({ name: 'bench' }, discard);
const wlog = winston.createLogger({
  transports: [new winston.transports.Stream({ stream: new (await import('node:stream')).Writable({ write(_c, _e, cb) { cb(); } }) }), ...(profiler ? [profilerTransport()] : [])],
});
app.get('/micro/pino', (req, res) => {
  const n = Number(req.query.n);
  const started = performance.now();
  for (let i = 0; i < n; i++) plog.info({ order: i, items: 3 }, 'order priced');
  res.json({ ms: performance.now() - started });
});
app.get('/micro/winston', (req, res) => {
  const n = Number(req.query.n);
  const started = performance.now();
  for (let i = 0; i < n; i++) wlog.info('order priced', { order: i, items: 3 });
  res.json({ ms: performance.now() - started });
});

// A failure three causes deep, for the debug exception page.
app.get('/boom', () => {
  const disk = new Error('ENOSPC: no space left on device');
  const cache = new Error('could not write the price cache', { cause: disk });
  const pricing = new Error('pricing failed for order 1234', { cause: cache });
  throw new Error('could not accept the order', { cause: pricing });
});

if (profiler) {
  app.use(profiler.notFound);
  app.use(profiler.errorHandler);
}

const server = app.listen(0, '127.0.0.1', () => process.send({ type: 'ready', port: server.address().port }));

process.on('message', (msg) => {
  if (msg.type === 'flush') {
    // Let the last batch land, then count what is stored.
    setTimeout(async () => {
      profiler?.flush();
      const store = profiler?.store();
      if (store?.shared) {
        // Tokens are UNIQUE in the table: every row is a distinct token.
        const stats = await store.stats();
        process.send({ type: 'flushed', count: stats.profiles, distinct: stats.profiles, bytes: stats.bytes, fileBytes: stats.bytes, rss: process.memoryUsage.rss() });
        return;
      }
      const count = store ? store.db.prepare('SELECT count(*) AS n FROM profiles').get().n : 0;
      const distinct = store ? store.db.prepare('SELECT count(DISTINCT token) AS n FROM profiles').get().n : 0;
      store?.db.pragma('wal_checkpoint(TRUNCATE)');
      const pages = store ? store.db.pragma('page_count', { simple: true }) * store.db.pragma('page_size', { simple: true }) : 0;
      const free = store ? store.db.pragma('freelist_count', { simple: true }) * store.db.pragma('page_size', { simple: true }) : 0;
      process.send({ type: 'flushed', count, distinct, bytes: pages - free, fileBytes: pages, rss: process.memoryUsage.rss() });
    }, 300);
  } else if (msg.type === 'cpu') {
    // The whole process: every thread (the request's, the writer, GC), user and system time, in µs.
    const { user, system } = process.cpuUsage();
    process.send({ type: 'cpu', us: user + system });
  } else if (msg.type === 'rss') {
    global.gc?.();
    process.send({ type: 'rss', rss: process.memoryUsage.rss() });
  } else if (msg.type === 'exit') {
    server.close();
    profiler?.close();
    process.exit(0);
  }
});
