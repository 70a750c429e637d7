// Private database servers for the tests and the bench: Debian's PostgreSQL (and helpers MariaDB
// uses too), on free ports and in directories of their own. Plain JavaScript, so that the bench,
// which runs without a compiler, starts the same server the tests do.
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';

export const root = userInfo().uid === 0;

/** @returns {Promise<number>} */
export const freePort = () => new Promise((resolve, reject) => {
  const server = createServer().listen(0, '127.0.0.1', () => {
    const { port } = server.address();
    server.close(() => resolve(port));
  }).on('error', reject);
});

/** A private directory for a server that runs as `user` (initdb and mariadbd refuse to run as root). */
export function privateDir(prefix, user) {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  if (root) {
    chownSync(dir, Number(execFileSync('id', ['-u', user]).toString().trim()), Number(execFileSync('id', ['-g', user]).toString().trim()));
    chmodSync(dir, 0o700);
  }
  return dir;
}

export const why = (err) => err?.stderr?.toString().trim() || err?.message || String(err);

/** Debian's PostgreSQL server binaries: /usr/lib/postgresql/<version>/bin, the newest first. */
function postgresBinaries() {
  const dir = '/usr/lib/postgresql';
  if (!existsSync(dir)) return undefined;
  const versions = readdirSync(dir).filter((v) => existsSync(path.join(dir, v, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a));
  return versions[0] && path.join(dir, versions[0], 'bin');
}

/** A PostgreSQL server's postmaster and its children (backends, background workers). */
function postgresProcesses(data) {
  const postmaster = Number(readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  let children = '';
  try {
    children = execFileSync('pgrep', ['-P', String(postmaster)]).toString();
  } catch {
    // None.
  }
  return [postmaster, ...children.split('\n').filter(Boolean).map(Number)];
}

/**
 * A PostgreSQL server of its own, on a private port and data directory; or why there is none.
 * pause() stops it (fast shutdown: connections are closed), resume() starts it again on the same
 * port and data; freeze() stops its processes where they are (a server that no longer answers),
 * thaw() lets them go on; stop() stops it and removes its data.
 */
export async function startPostgres() {
  const bin = postgresBinaries();
  if (!bin) return 'no PostgreSQL server at /usr/lib/postgresql/*/bin (apt-get install -y postgresql)';
  const dir = privateDir('wp-pg-', 'postgres');
  const as = (cmd, args) => (root ? execFileSync('runuser', ['-u', 'postgres', '--', path.join(bin, cmd), ...args], { stdio: 'pipe' }) : execFileSync(path.join(bin, cmd), args, { stdio: 'pipe' }));
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
    // Every process of it stopped, postmaster first (it forks no more): connections stay open and nothing answers.
    freeze: () => { for (const pid of postgresProcesses(data)) process.kill(pid, 'SIGSTOP'); },
    thaw: () => { for (const pid of postgresProcesses(data).reverse()) process.kill(pid, 'SIGCONT'); },
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

/**
 * Debian's nginx in front of `upstream` (host:port), on a private port, as a single process of the
 * current user; `location` is the body of its `location /` block. Returns its URL and stop(), or
 * why there is none.
 */
export async function startNginx(upstream, location = `proxy_pass http://${upstream};`) {
  if (!existsSync('/usr/sbin/nginx')) return 'no nginx at /usr/sbin/nginx (apt-get install -y nginx)';
  const dir = mkdtempSync(path.join(tmpdir(), 'wp-nginx-'));
  const port = await freePort();
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((name) => `${name}_temp_path ${dir}/${name};`).join(' ');
  writeFileSync(path.join(dir, 'nginx.conf'), `daemon off; master_process off; pid ${dir}/nginx.pid; error_log ${dir}/error.log;
events { worker_connections 64; }
http { access_log off; ${temp}
  server { listen 127.0.0.1:${port}; location / { ${location} } } }
`);
  const server = spawn('/usr/sbin/nginx', ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-e', path.join(dir, 'error.log')], { stdio: 'ignore' });
  const stop = () => {
    server.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  for (let i = 0; i < 100 && server.exitCode === null; i++) {
    const up = await new Promise((resolve) => {
      const socket = connect({ port, host: '127.0.0.1' }, () => { socket.destroy(); resolve(true); }).on('error', () => resolve(false));
    });
    if (up) return { url: `http://127.0.0.1:${port}`, stop };
    await new Promise((r) => setTimeout(r, 100));
  }
  const log = existsSync(path.join(dir, 'error.log')) ? readFileSync(path.join(dir, 'error.log'), 'utf8').trim() : '';
  stop();
  return `nginx did not start: ${log || `exit ${server.exitCode}`}`;
}

/** Debian's redis-server on a private port, in memory only: its URL and stop(), or why there is none. */
export async function startRedis() {
  const bin = ['/usr/bin/redis-server', '/usr/sbin/redis-server'].find((b) => existsSync(b));
  if (!bin) return 'no redis-server at /usr/bin/redis-server (apt-get install -y redis-server)';
  const port = await freePort();
  const server = spawn(bin, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'], { stdio: 'ignore' });
  const stop = () => void server.kill('SIGKILL');
  for (let i = 0; i < 100 && server.exitCode === null; i++) {
    if (await new Promise((resolve) => connect(port, '127.0.0.1').on('connect', function () { this.destroy(); resolve(true); }).on('error', () => resolve(false)))) return { url: `redis://127.0.0.1:${port}`, stop };
    await new Promise((r) => setTimeout(r, 100));
  }
  stop();
  return 'redis-server did not start within 10 s';
}
