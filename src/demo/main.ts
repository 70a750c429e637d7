import type { AddressInfo } from 'node:net';
import { createDemoApp } from './app.js';
import { configFrom } from './config.js';
import { privateRedis } from './status-cache.js';

async function main(): Promise<void> {
  const config = configFrom();
  // Without REDIS_URL, a redis-server of the demo's own caches the status checks, where Debian's is installed.
  const redis = config.redisUrl || config.env === 'prod' ? undefined : await privateRedis();
  if (redis) config.redisUrl = redis.url;
  const demo = await createDemoApp(config);

  const server = demo.app.listen(config.port, config.host, () => {
    // The port actually bound: PORT=0 picks a free one.
    const { port } = server.address() as AddressInfo;
    const api = `http://${config.host}:${port}`;
    const admin = `http://${config.adminHost}:${port}`;
    console.log(`Platform service (APP_ENV=${config.env})`);
    console.log(`  API        ${api}   (POST /api/authenticate, GET /api/me, HEAD /pub/status/db|web)`);
    console.log(`  Admin      ${admin}/`);
    const { enabled, keyMade, secret } = demo.profiler.options;
    // The link carries the key the profiler made (kept beside its store): opened once, a cookie keeps it.
    if (enabled) console.log(`  Profiler   ${api}/_profiler/${keyMade ? `?_profiler_secret=${encodeURIComponent(secret!)}` : '   (present WEB_PROFILER_SECRET once)'}`);
    console.log(`  Cache      ${config.redisUrl ? `${config.redisUrl}${redis ? '   (a private redis-server; set REDIS_URL for yours)' : ''}` : 'none (set REDIS_URL, or install redis-server)'}`);
    if (demo.seeded) console.log(`  Seeded admin account: ${demo.seeded.username} / ${demo.seeded.password}   (shown once; stored hashed in ${config.platformDb})`);
  });

  const shutdown = () => server.close(() => {
    demo.close();
    redis?.stop();
    process.exit(0);
  });
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}

void main();
