import { execFileSync, spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { freePort, privateDir, root, startPostgres, startRedis, why } from './servers.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Database servers of the test run's own, or '' when one could not be started (the reason is in …Missing). */
    pgUrl: string;
    pgMissing: string;
    mysqlUrl: string;
    mysqlMissing: string;
    redisUrl: string;
    redisMissing: string;
  }
}

const accepts = (port: number) => new Promise<boolean>((resolve) => {
  const socket = createConnection({ port, host: '127.0.0.1' }, () => {
    socket.destroy();
    resolve(true);
  }).on('error', () => resolve(false));
});

/** Debian's MariaDB server (MySQL's protocol), on a private port, without grant tables: any user, no password. */
async function startMariadb(): Promise<{ url: string; stop(): void } | string> {
  if (!existsSync('/usr/sbin/mariadbd')) return 'no MariaDB server at /usr/sbin/mariadbd (apt-get install -y mariadb-server)';
  const dir = privateDir('wp-mysql-', 'mysql');
  const data = path.join(dir, 'data');
  const port = await freePort();
  const user = root ? ['--user=mysql'] : [];
  try {
    execFileSync('mariadb-install-db', ['--no-defaults', `--datadir=${data}`, ...user, '--auth-root-authentication-method=normal', '--skip-test-db'], { stdio: 'pipe' });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    return `MariaDB could not be set up: ${why(err)}`;
  }
  const server = spawn('/usr/sbin/mariadbd', [
    '--no-defaults', `--datadir=${data}`, `--socket=${path.join(dir, 'sock')}`, `--pid-file=${path.join(dir, 'pid')}`, `--port=${port}`,
    '--bind-address=127.0.0.1', ...user, '--skip-grant-tables', '--innodb-buffer-pool-size=16M', '--skip-log-bin', `--log-error=${path.join(dir, 'log')}`,
  ], { stdio: 'ignore' });
  const stop = () => {
    server.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  for (let i = 0; i < 150 && server.exitCode === null; i++) {
    if (await accepts(port)) return { url: `mysql://root@127.0.0.1:${port}/mysql`, stop };
    await new Promise((r) => setTimeout(r, 200));
  }
  stop();
  return 'MariaDB did not start within 30 s';
}

/**
 * Real database servers for the driver tests, started once for the run on private ports and data
 * directories, and stopped and removed after it.
 */
export default async function setup(project: TestProject) {
  const [pg, mysql, redis] = await Promise.all([startPostgres(), startMariadb(), startRedis()]);
  project.provide('redisUrl', typeof redis === 'string' ? '' : redis.url);
  project.provide('redisMissing', typeof redis === 'string' ? redis : '');
  project.provide('pgUrl', typeof pg === 'string' ? '' : pg.url);
  project.provide('pgMissing', typeof pg === 'string' ? pg : '');
  project.provide('mysqlUrl', typeof mysql === 'string' ? '' : mysql.url);
  project.provide('mysqlMissing', typeof mysql === 'string' ? mysql : '');
  return () => {
    if (typeof pg !== 'string') pg.stop();
    if (typeof mysql !== 'string') mysql.stop();
    if (typeof redis !== 'string') redis.stop();
  };
}
