import express from 'express';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webProfiler } from '../src/index.js';
import { listen, tempDb, type Running } from './helpers.js';

const WRONG = 'hunter2-but-wrong';
const BEARER = 'session-bearer-5f1c9e2a7b';

let server: Running;
let profiler: ReturnType<typeof webProfiler>;
/** The app as it is, then changed to accept any sign-in: the test made from its refusal must pass, then fail. */
let acceptAll = false;

beforeAll(async () => {
  profiler = webProfiler({ database: tempDb(), onError: () => {} });
  const app = express();
  app.use(profiler);
  app.use(express.json());
  app.post('/api/login', (req, res) => {
    if (acceptAll || req.body.password === 'the-right-one') return res.json({ ok: true, user: { id: 7, name: req.body.username } });
    res.status(401).json({ error: 'invalid_credentials', message: 'Wrong password.', requestId: randomUUID(), at: new Date().toISOString(), attempts: { left: 2 } });
  });
  // What it was sent, counted: a replay that reads CR LF as LF answers other counts.
  app.post('/upload', express.raw({ type: () => true }), (req, res) => {
    const text = (req.body as Buffer).toString('latin1');
    res.json({ size: text.length, crlf: text.split('\r\n').length - 1 });
  });
  app.get('/ping', (_req, res) => res.send('pong'));
  server = await listen(app);
});
afterAll(async () => {
  await server?.close();
  profiler?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Where the made files run: inside the project, so that `vitest` resolves for them. */
const dir = path.resolve('test-artifacts', `copy-as-test-${process.pid}`);
mkdirSync(dir, { recursive: true });
// The project's own config would look for test/**/*.test.ts: the made file's directory has its own.
writeFileSync(path.join(dir, 'vitest.config.mjs'), "export default { test: { include: ['**/*.test.mjs'] } };\n");

const RUN = {
  node: (file: string) => [process.execPath, ['--test', file]],
  vitest: (file: string) => [process.execPath, [path.resolve('node_modules/vitest/vitest.mjs'), 'run', path.basename(file), '--root', dir, '--config', path.join(dir, 'vitest.config.mjs')]],
  jest: (file: string) => [process.execPath, [path.resolve('node_modules/jest/bin/jest.js'), '--rootDir', dir, '--ci', path.basename(file)]],
} as const;

describe.each(['node', 'vitest', 'jest'] as const)('a refused sign-in as a %s test', (runner) => {
  it('passes against the app as it is, fails once the app accepts the sign-in, and holds no secret the request sent', async () => {
    acceptAll = false;
    const refused = await fetch(`${server.url}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${BEARER}` }, body: JSON.stringify({ username: 'ada', password: WRONG }) });
    expect(refused.status).toBe(401);
    const made = await fetch(`${server.url}/_profiler/${refused.headers.get('x-debug-token')}/test?runner=${runner}`);
    expect(made.status).toBe(200);
    // A download no page can run as a script.
    expect(made.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(made.headers.get('content-disposition')).toMatch(/^attachment; filename="[0-9a-f]+\.test\.m?js"$/);
    const text = await made.text();
    expect(text).not.toContain(WRONG);
    expect(text).not.toContain(BEARER);
    expect(text).toContain('process.env.WP_SECRET_1');
    expect(text).toContain('assert.deepEqual(body.message, "Wrong password.");');
    // The id and the time vary from run to run: checked by type.
    expect(text).toContain('assert.equal(typeof body.requestId, "string");');
    const file = path.join(dir, `${runner}-${Date.now()}.test.${runner === 'jest' ? 'js' : 'mjs'}`);
    writeFileSync(file, text);
    // In a process of its own, while this one serves the app: never a synchronous spawn here.
    const run = () => new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const [command, args] = RUN[runner](file);
      const child = spawn(command as string, args as string[], { cwd: dir, env: { ...process.env, [runner === 'vitest' ? 'APP_URL' : 'BASE_URL']: server.url, NODE_ENV: 'test', VITEST: '', VITEST_WORKER_ID: '', VITEST_POOL_ID: '' } });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c));
      child.stderr.on('data', (c: Buffer) => (stderr += c));
      child.on('error', reject);
      child.on('close', (status) => resolve({ status, stdout, stderr }));
    });
    const passing = await run();
    expect(passing.status, passing.stdout + passing.stderr).toBe(0);
    acceptAll = true;
    const failing = await run();
    expect(failing.status, failing.stdout + failing.stderr).not.toBe(0);
    expect(failing.stdout + failing.stderr).toMatch(/answered 200, recorded 401/);
  });
});

/** A made test file run by node --test against the app, in a process of its own. */
function runNode(file: string, env: Record<string, string> = {}) {
  return new Promise<{ status: number | null; output: string }>((resolve, reject) => {
    const child = spawn(process.execPath, ['--test', file], { cwd: dir, env: { ...process.env, BASE_URL: server.url, ...env } });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c));
    child.stderr.on('data', (c: Buffer) => (output += c));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, output }));
  });
}

describe('a replayed body is the recorded one, byte for byte', () => {
  it('a body of CR LF lines with a redacted field keeps its CR LF: the app counts the same', async () => {
    // Text the profiler keeps as text (a multipart body too, where its type is textual), a secret in it.
    const multipart = ['--x-boundary-42', 'Content-Disposition: form-data; name="note"', '', 'line one', 'password=hunter2-multipart', '--x-boundary-42--', ''].join('\r\n');
    const sent = await fetch(`${server.url}/upload`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: multipart });
    const counted = await sent.json() as { size: number; crlf: number };
    expect(counted.crlf).toBe(6);
    profiler.flush();
    const text = await (await fetch(`${server.url}/_profiler/${sent.headers.get('x-debug-token')}/test?runner=node`)).text();
    expect(text).not.toContain('hunter2-multipart');
    expect(text).toContain(`assert.deepEqual(body.size, ${counted.size});`);
    const file = path.join(dir, `crlf-${Date.now()}.test.mjs`);
    writeFileSync(file, text);
    // The redacted password is given back as the variable it became: the same bytes go out.
    const run = await runNode(file, { WP_SECRET_1: 'hunter2-multipart' });
    expect(run.status, run.output).toBe(0);
  });

  it('a 60 kB body: its request panel and its exports cost what its size does, and the app\'s other routes do not wait', async () => {
    // One anonymous request that no route serves, its body a single long word: what made the hole-naming pattern quadratic.
    const posted = async (size: number) => {
      const res = await fetch(`${server.url}/nowhere`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ note: 'a'.repeat(size), password: 'hunter2' }) });
      await res.text();
      return res.headers.get('x-debug-token');
    };
    const [small, large] = [await posted(6_000), await posted(60_000)];
    profiler.flush();
    const ping = async () => {
      const at = performance.now();
      await (await fetch(`${server.url}/ping`)).text();
      return performance.now() - at;
    };
    // The panel and the exports of each, timed side by side in this run, with a ping beside them.
    const pages = async (token: string | null) => {
      const started = performance.now();
      const [statuses, pinged] = await Promise.all([
        Promise.all(['?panel=request', '/curl', '/fetch', '/test?runner=jest'].map(async (p) => (await fetch(`${server.url}/_profiler/${token}${p}`)).status)),
        ping(),
      ]);
      return { statuses, ms: performance.now() - started, pinged };
    };
    const quiet = await ping();
    const a = await pages(small);
    const b = await pages(large);
    expect([a.statuses, b.statuses]).toEqual([[200, 200, 200, 200], [200, 200, 200, 200]]);
    // Ten times the bytes: linear work takes about ten times as long, the quadratic pattern took a hundred (4.8 s).
    expect(b.ms).toBeLessThan(30 * a.ms);
    expect(b.pinged).toBeLessThan(30 * Math.max(a.pinged, quiet));
  });

});

describe.each(['node', 'vitest', 'jest'] as const)('a %s test saved under its suggested name', (runner) => {
  it.each(['CommonJS', 'ES module'])('runs with the line it prints, in a fresh %s project of the runner\'s defaults', async (kind) => {
    acceptAll = false;
    const refused = await fetch(`${server.url}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'ada', password: WRONG }) });
    await refused.text();
    profiler.flush();
    const made = await fetch(`${server.url}/_profiler/${refused.headers.get('x-debug-token')}/test?runner=${runner}`);
    const name = /filename="([^"]+)"/.exec(made.headers.get('content-disposition') ?? '')![1];
    const text = await made.text();
    // A project with nothing but the runner installed: no config, the package's own type.
    const project = path.join(dir, `fresh-${runner}-${kind === 'CommonJS' ? 'cjs' : 'esm'}`);
    mkdirSync(project, { recursive: true });
    writeFileSync(path.join(project, 'package.json'), JSON.stringify(kind === 'CommonJS' ? { name: 'fresh' } : { name: 'fresh', type: 'module' }));
    symlinkSync(path.resolve('node_modules'), path.join(project, 'node_modules'));
    writeFileSync(path.join(project, name), text);
    const line = /^\/\/ Run it against the app: (.+)$/m.exec(text)![1];
    expect(line).toContain(name);
    const { VITEST: _v, VITEST_WORKER_ID: _w, VITEST_POOL_ID: _p, NODE_ENV: _n, ...shell } = process.env;
    const run = await new Promise<{ status: number | null; output: string }>((resolve, reject) => {
      const child = spawn('sh', ['-c', line], { cwd: project, env: { ...shell, PATH: `${path.dirname(process.execPath)}:${shell.PATH}` } });
      let output = '';
      child.stdout.on('data', (c: Buffer) => (output += c));
      child.stderr.on('data', (c: Buffer) => (output += c));
      child.on('error', reject);
      child.on('close', (status) => resolve({ status, output }));
    });
    expect(run.status, run.output).toBe(0);
    expect(run.output).toMatch(/pass|passed|✓/i);
  });
});
