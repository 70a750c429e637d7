import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Database servers of the test run's own, or '' when one could not be started (the reason is in …Missing). */
    pgUrl: string;
    pgMissing: string;
    mysqlUrl: string;
    mysqlMissing: string;
  }
}

const root = userInfo().uid === 0;

const freePort = () => new Promise<number>((resolve, reject) => {
  const server = createServer().listen(0, '127.0.0.1', () => {
    const { port } = server.address() as { port: number };
    server.close(() => resolve(port));
  }).on('error', reject);
});

/** A private directory for a server that runs as `user` (initdb and mariadbd refuse to run as root). */
function privateDir(prefix: string, user: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  if (root) {
    chownSync(dir, Number(execFileSync('id', ['-u', user]).toString().trim()), Number(execFileSync('id', ['-g', user]).toString().trim()));
    chmodSync(dir, 0o700);
  }
  return dir;
}

const why = (err: unknown) => (err as { stderr?: Buffer }).stderr?.toString().trim() || (err as Error).message;

/** Debian's PostgreSQL server binaries: /usr/lib/postgresql/<version>/bin, the newest first. */
function postgresBinaries(): string | undefined {
  const dir = '/usr/lib/postgresql';
  if (!existsSync(dir)) return undefined;
  const versions = readdirSync(dir).filter((v) => existsSync(path.join(dir, v, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a));
  return versions[0] && path.join(dir, versions[0], 'bin');
}

export interface PostgresServer {
  url: string;
  /** Stop it (fast shutdown: connections are closed) and start it again on the same port and data. */
  pause(): void;
  resume(): void;
  /** Stop it and remove its data. */
  stop(): void;
}

/** A PostgreSQL server of its own, on a private port and data directory (the shared-store tests stop and restart one). */
export async function startPostgres(): Promise<PostgresServer | string> {
  const bin = postgresBinaries();
  if (!bin) return 'no PostgreSQL server at /usr/lib/postgresql/*/bin (apt-get install -y postgresql)';
  const dir = privateDir('wp-pg-', 'postgres');
  const as = (cmd: string, args: string[]) => (root ? execFileSync('runuser', ['-u', 'postgres', '--', path.join(bin, cmd), ...args], { stdio: 'pipe' }) : execFileSync(path.join(bin, cmd), args, { stdio: 'pipe' }));
  const data = path.join(dir, 'data');
  const port = await freePort();
  const start = () => as('pg_ctl', ['-D', data, '-l', path.join(dir, 'log'), '-w', '-t', '30', '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off`, 'start']);
  try {
    as('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
    start();
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    return `PostgreSQL could not be started: ${why(err)}`;
  }
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    pause: () => void as('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']),
    resume: () => void start(),
    stop() {
      try {
        as('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
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
  const [pg, mysql] = await Promise.all([startPostgres(), startMariadb()]);
  project.provide('pgUrl', typeof pg === 'string' ? '' : pg.url);
  project.provide('pgMissing', typeof pg === 'string' ? pg : '');
  project.provide('mysqlUrl', typeof mysql === 'string' ? '' : mysql.url);
  project.provide('mysqlMissing', typeof mysql === 'string' ? mysql : '');
  return () => {
    if (typeof pg !== 'string') pg.stop();
    if (typeof mysql !== 'string') mysql.stop();
  };
}
