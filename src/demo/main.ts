import type { AddressInfo } from 'node:net';
import { createDemoApp } from './app.js';
import { configFrom } from './config.js';
import { privateRedis } from './status-cache.js';

/** `npm start -- --reset-admin`: the admin account gets a new password, shown in the banner. */
const RESET_ADMIN = '--reset-admin';

async function main(): Promise<void> {
  const config = configFrom();
  // Without REDIS_URL, a redis-server of the demo's own caches the status checks, where Debian's is installed.
  const redis = config.redisUrl || config.env === 'prod' ? undefined : await privateRedis();
  if (redis) config.redisUrl = redis.url;
  const demo = await createDemoApp(config, { resetAdmin: process.argv.includes(RESET_ADMIN) });

  const server = demo.app.listen(config.port, config.host, () => {
    // The port actually bound: PORT=0 picks a free one. A loopback address is named localhost, as
    // the browser will be given it: the profiler's key is kept in a cookie per host name.
    const { port } = server.address() as AddressInfo;
    const host = /^(127\.0\.0\.1|0\.0\.0\.0|::1?)$/.test(config.host) ? 'localhost' : config.host;
    const api = `http://${host}:${port}`;
    const admin = `http://${config.adminHost}:${port}`;
    console.log(`Platform service (APP_ENV=${config.env})`);
    console.log(`  API        ${api}   (POST /api/authenticate, GET /api/me, HEAD /pub/status/db|web)`);
    console.log(`  Admin      ${admin}/`);
    const profiler = demo.profiler.link(api);
    // Opened once, the key opens the profiler and the toolbar on the admin host too.
    if (profiler) console.log(`  Profiler   ${profiler}${demo.profiler.options.keyMade ? '' : '   (present WEB_PROFILER_SECRET once)'}`);
    console.log(`  Cache      ${config.redisUrl ? `${config.redisUrl}${redis ? '   (a private redis-server; set REDIS_URL for yours)' : ''}` : 'none (set REDIS_URL, or install redis-server)'}`);
    const { username, password } = demo.admin;
    if (password) console.log(`  Admin sign-in: ${username} / ${password}   (shown once, stored hashed in ${config.platformDb}; \`npm start -- ${RESET_ADMIN}\` makes a new one)`);
    else console.log(`  Admin sign-in: ${username}   (its password was shown when it was made; \`npm start -- ${RESET_ADMIN}\` makes a new one)`);
  });
  server.on('error', (err) => {
    console.error(`The platform service could not listen on ${config.host}:${config.port}: ${err.message}`);
    demo.close();
    redis?.stop();
    process.exitCode = 1;
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
