import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { once } from 'node:events';
import { connect } from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from './helpers.js';

/** `npm start` as a developer meets it: dist/demo/main.js, its banner, the link it prints. */
const started: ChildProcess[] = [];
afterEach(() => {
  for (const child of started.splice(0)) child.kill('SIGKILL');
});

interface Banner {
  child: ChildProcess;
  text: string;
  port: number;
}

/** Starts the demo and resolves with its banner once it names the admin sign-in (its last line). */
function start(storage: string, ...args: string[]): Promise<Banner> {
  // Access as a stranger's browser would meet it: no trusted loopback, the key or nothing.
  const env = { ...process.env, PORT: '0', APP_ENV: 'dev', STORAGE_DIR: storage, WEB_PROFILER_TRUST_LOCAL: '', NODE_ENV: 'development' };
  // As npm start runs it: with source maps, so that the profile names the demo's TypeScript lines.
  const child = spawn(process.execPath, ['--enable-source-maps', 'dist/demo/main.js', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  return new Promise((resolve, reject) => {
    let text = '';
    child.stdout!.on('data', (d) => {
      text += d;
      const port = /API\s+http:\/\/localhost:(\d+)/.exec(text)?.[1];
      if (port && /Admin sign-in: .*\n/.test(text)) resolve({ child, text, port: Number(port) });
    });
    child.stderr!.on('data', (d) => (text += d));
    child.once('exit', (code, signal) => reject(new Error(`the demo ended (${code ?? signal}) before its banner:\n${text}`)));
  });
}

function get(port: number, host: string, pathname: string, cookie = ''): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: pathname, headers: { host: `${host}:${port}`, accept: 'text/html', cookie } }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d) => (body += d)).on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject).end();
  });
}

const exited = (child: ChildProcess) => new Promise<void>((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve())));

const accepts = (port: number) => new Promise<boolean>((resolve) => {
  const socket = connect({ port, host: '127.0.0.1' }, () => {
    socket.destroy();
    resolve(true);
  }).on('error', () => resolve(false));
});

describe('npm start', () => {
  it('prints one profiler link, for localhost, whose key opens the profiler and the toolbar on the admin host too', async () => {
    const { text, port } = await start(path.join(tempDir(), 'storage'));
    const links = text.match(/https?:\/\/\S+\/_profiler\/\S*/g) ?? [];
    expect(links).toHaveLength(1);
    const link = new URL(links[0]!);
    expect(link.hostname).toBe('localhost');
    expect(link.searchParams.get('_profiler_secret')).toMatch(/^[\w-]{16,}$/);

    // The link sets the key's cookie on localhost, then on admin.localhost, then comes back.
    const first = await get(port, 'localhost', link.pathname + link.search);
    expect(first.status).toBe(303);
    const onLocalhost = String(first.headers['set-cookie']).split(';')[0];
    const hop = new URL(String(first.headers.location));
    expect(hop.host).toBe(`admin.localhost:${port}`);
    const second = await get(port, 'admin.localhost', hop.pathname + hop.search);
    expect(second.status).toBe(303);
    const onAdmin = String(second.headers['set-cookie']).split(';')[0];
    expect(second.headers.location).toBe(`http://localhost:${port}/_profiler/`);

    // Each host opens the profiler with its own cookie, and without it refuses.
    expect((await get(port, 'localhost', '/_profiler/', onLocalhost)).status).toBe(200);
    expect((await get(port, 'admin.localhost', '/_profiler/', onAdmin)).status).toBe(200);
    expect((await get(port, 'admin.localhost', '/_profiler/')).status).toBe(403);
    // The admin host's sign-in page carries the toolbar for the holder of the key.
    const signIn = await get(port, 'admin.localhost', '/', onAdmin);
    expect(signIn.status).toBe(200);
    const token = String(signIn.headers['x-debug-token']);
    expect((await get(port, 'admin.localhost', `/_wdt/${token}`, onAdmin)).status).toBe(200);
  });

  it('shows the admin password at the first start, names the command that makes a new one, and that command works', async () => {
    const storage = path.join(tempDir(), 'storage');
    const first = await start(storage);
    expect(first.text).toMatch(/Admin sign-in: dev \/ [\w-]{12}\s/);
    first.child.kill('SIGTERM');
    await exited(first.child);

    const again = await start(storage);
    expect(again.text).toMatch(/Admin sign-in: dev\s+\(its password was shown when it was made; `npm start -- --reset-admin` makes a new one\)/);
    again.child.kill('SIGTERM');
    await exited(again.child);

    const reset = await start(storage, '--reset-admin');
    const password = /Admin sign-in: dev \/ ([\w-]{12})\s/.exec(reset.text)?.[1];
    expect(password).toBeDefined();
    const signIn = await new Promise<number>((resolve, reject) => {
      const body = `username=dev&password=${password}`;
      const req = request({ host: '127.0.0.1', port: reset.port, method: 'POST', path: '/api/authenticate', headers: { host: `localhost:${reset.port}`, 'content-type': 'application/x-www-form-urlencoded', 'content-length': body.length } }, (res) => {
        res.resume().on('end', () => resolve(res.statusCode!));
      });
      req.on('error', reject).end(body);
    });
    expect(signIn).toBe(200);
  });

  it('a refused sign-in\'s failure card names the demo\'s own TypeScript lines, not the build\'s', async () => {
    const { text, port } = await start(path.join(tempDir(), 'storage'));
    const key = new URL(/http:\/\/localhost:\d+\/_profiler\/\?\S+/.exec(text)![0]).searchParams.get('_profiler_secret')!;
    const refused = await fetch(`http://127.0.0.1:${port}/api/authenticate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'mallory', password: 'hunter2' }) });
    expect(refused.status).toBe(401);
    const token = refused.headers.get('x-debug-token');
    const profile = await (await fetch(`http://127.0.0.1:${port}/_profiler/${token}`, { headers: { accept: 'application/json', 'x-profiler-secret': key } })).json();
    expect(profile.collectors.response.answeredAt[0]).toMatch(/src[\\/]demo[\\/]api\.ts:\d+$/);
    const card = await (await fetch(`http://127.0.0.1:${port}/_profiler/${token}`, { headers: { 'x-profiler-secret': key } })).text();
    expect(card).toMatch(/Sent from <[^>]+>src\/demo\/api\.ts:\d+/);
    expect(card).not.toContain('dist/demo/api.js');
  });

  it('a start killed outright leaves no redis-server of its own behind', async () => {
    const { child, text } = await start(path.join(tempDir(), 'storage'));
    const redisPort = Number(/Cache\s+redis:\/\/127\.0\.0\.1:(\d+)/.exec(text)?.[1]);
    expect.soft(redisPort, 'Debian\'s redis-server is installed here').toBeGreaterThan(0);
    if (!redisPort) return;
    // A connection of the test's to that server: it closes when the server goes (the test's timeout is the ceiling).
    const held = connect({ port: redisPort, host: '127.0.0.1' });
    await once(held, 'connect');
    const closed = once(held, 'close');
    held.on('error', () => {});
    child.kill('SIGKILL');
    await exited(child);
    await closed;
    expect(await accepts(redisPort)).toBe(false);
  });
});
