import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A PostgreSQL server of the test run's own, or '' when none could be started (the reason is in pgMissing). */
    pgUrl: string;
    pgMissing: string;
  }
}

/** Debian's server binaries: /usr/lib/postgresql/<version>/bin, the newest first. */
function binaries(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).filter((v) => existsSync(path.join(root, v, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a));
  return versions[0] && path.join(root, versions[0], 'bin');
}

const freePort = () => new Promise<number>((resolve, reject) => {
  const server = createServer().listen(0, '127.0.0.1', () => {
    const { port } = server.address() as { port: number };
    server.close(() => resolve(port));
  }).on('error', reject);
});

/**
 * A real PostgreSQL for the pg tests: Debian's server, started on a private port and data
 * directory (as the `postgres` user when the tests run as root, which initdb refuses), stopped and
 * removed after the run.
 */
export default async function setup(project: TestProject) {
  const bin = binaries();
  if (!bin) {
    project.provide('pgUrl', '');
    project.provide('pgMissing', 'no PostgreSQL server at /usr/lib/postgresql/*/bin (apt-get install -y postgresql)');
    return;
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'wp-pg-'));
  const root = userInfo().uid === 0;
  if (root) {
    chownSync(dir, Number(execFileSync('id', ['-u', 'postgres']).toString().trim()), Number(execFileSync('id', ['-g', 'postgres']).toString().trim()));
    chmodSync(dir, 0o700);
  }
  const as = (cmd: string, args: string[]) => (root ? execFileSync('runuser', ['-u', 'postgres', '--', path.join(bin, cmd), ...args], { stdio: 'pipe' }) : execFileSync(path.join(bin, cmd), args, { stdio: 'pipe' }));
  const data = path.join(dir, 'data');
  const port = await freePort();
  try {
    as('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
    as('pg_ctl', ['-D', data, '-l', path.join(dir, 'log'), '-w', '-t', '30', '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off`, 'start']);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    const e = err as { stderr?: Buffer; message: string };
    project.provide('pgUrl', '');
    project.provide('pgMissing', `PostgreSQL could not be started: ${e.stderr?.toString().trim() || e.message}`);
    return;
  }
  project.provide('pgUrl', `postgres://postgres@127.0.0.1:${port}/postgres`);
  project.provide('pgMissing', '');
  return () => {
    try {
      as('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
}
