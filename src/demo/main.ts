import type { AddressInfo } from 'node:net';
import { createDemoApp } from './app.js';
import { configFrom } from './config.js';

async function main(): Promise<void> {
  const config = configFrom();
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
    if (demo.seeded) console.log(`  Seeded admin account: ${demo.seeded.username} / ${demo.seeded.password}   (shown once; stored hashed in ${config.platformDb})`);
  });

  const shutdown = () => server.close(() => {
    demo.close();
    process.exit(0);
  });
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}

void main();
