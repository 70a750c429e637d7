// A benchmark subject: the same Express app, bare or recorded, in its own process.
// argv: <bare|recorded> <database> <maxProfiles>. Talks to the runner over IPC.
import express from 'express';
import { webProfiler } from '../dist/index.js';

const [mode, database, maxProfiles = '1000000'] = process.argv.slice(2);
const app = express();
const profiler = mode === 'recorded'
  ? webProfiler({ database, maxProfiles: Number(maxProfiles), maxAge: 365 * 24 * 3600 * 1000, onError: (m) => process.stderr.write(`[bench server] ${m}\n`) })
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
    setTimeout(() => {
      profiler?.flush();
      const store = profiler?.store();
      const count = store ? store.db.prepare('SELECT count(*) AS n FROM profiles').get().n : 0;
      const distinct = store ? store.db.prepare('SELECT count(DISTINCT token) AS n FROM profiles').get().n : 0;
      store?.db.pragma('wal_checkpoint(TRUNCATE)');
      const pages = store ? store.db.pragma('page_count', { simple: true }) * store.db.pragma('page_size', { simple: true }) : 0;
      const free = store ? store.db.pragma('freelist_count', { simple: true }) * store.db.pragma('page_size', { simple: true }) : 0;
      process.send({ type: 'flushed', count, distinct, bytes: pages - free, fileBytes: pages, rss: process.memoryUsage.rss() });
    }, 300);
  } else if (msg.type === 'rss') {
    global.gc?.();
    process.send({ type: 'rss', rss: process.memoryUsage.rss() });
  } else if (msg.type === 'exit') {
    server.close();
    profiler?.close();
    process.exit(0);
  }
});
