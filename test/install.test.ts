import { execFile, execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';

/**
 * The packed tarball installed by each package manager into an app that pins Express 4 and
 * better-sqlite3 11.8.1, its packages fetched as its own install would fetch them. On Node 20 the
 * profiler stores its profiles through the app's better-sqlite3 (11 is the oldest it takes);
 * on Node 22 and later it stores through node:sqlite, and the app's 11 is its own business.
 */
const run = promisify(execFile);
const NODE_MAJOR = Number(process.versions.node.split('.')[0]);
const root = path.resolve('test-artifacts', `install-${process.pid}`);
let tarball = '';

beforeAll(async () => {
  rmSync(root, { recursive: true, force: true });
  mkdirSync(root, { recursive: true });
  // What `npm pack` makes (it builds first: prepack); npm test has just built, so not again here.
  const { stdout } = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', root]);
  tarball = path.join(root, (JSON.parse(stdout) as { filename: string }[])[0].filename);
}, 120_000);

// npm's settings of this run stay out, but for the Node headers native addons build against (this
// machine reaches no download of them).
const env = {
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(VITEST|NODE_ENV|WEB_PROFILER_|npm_)/.test(name))),
  ...(nodedir() ? { npm_config_nodedir: nodedir() } : {}),
};

const npmRegistry = (): string => execFileSync('npm', ['config', 'get', 'registry'], { encoding: 'utf8' }).trim();

function nodedir(): string {
  return process.env.npm_config_nodedir || execFileSync('npm', ['config', 'get', 'nodedir'], { encoding: 'utf8' }).trim().replace(/^undefined$/, '');
}

/** A copy of the pinned app, `files` written into it. */
function app(name: string, files: Record<string, string> = {}): string {
  const dir = path.join(root, name);
  cpSync(path.resolve('test/fixtures/apps/pinned'), dir, { recursive: true });
  for (const [file, text] of Object.entries(files)) writeFileSync(path.join(dir, file), text);
  return dir;
}

async function served(dir: string) {
  const { stdout } = await run(process.execPath, ['server.js'], { cwd: dir, timeout: 60_000, env: { ...env, NODE_ENV: 'development', WEB_PROFILER_TRUST_LOCAL: '1' } });
  return JSON.parse(stdout.trim().split('\n').pop()!) as { status: number; body: unknown; token: string; panel: { status: number; text: string }; driver: string; resolved: string };
}

const managers: [string, (dir: string) => Promise<unknown>][] = [
  ['npm', (dir) => run('npm', ['install', '--no-audit', '--no-fund', tarball], { cwd: dir, env, timeout: 600_000 })],
  // From the registry npm is set to use, whichever yarn would default to.
  ['yarn', (dir) => run(process.execPath, [path.resolve('node_modules/yarn/bin/yarn.js'), 'add', '--non-interactive', '--no-progress', '--registry', npmRegistry(), `file:${tarball}`], { cwd: dir, env, timeout: 600_000 })],
  ['pnpm', (dir) => run(process.execPath, [path.resolve('node_modules/pnpm/bin/pnpm.cjs'), 'add', tarball], { cwd: dir, env, timeout: 600_000 })],
];

// Each install builds better-sqlite3 11 from source here (its prebuilt binaries are out of reach),
// a minute or two apiece: the three managers run on Node 20, where the profiler stores through
// the app's copy; on later Nodes, where it does not, npm alone.
describe.each(NODE_MAJOR < 22 ? managers : managers.slice(0, 1))('an Express 4 app pinning better-sqlite3 11.8.1, installed with %s', (manager, install) => {
  it('takes the package as it is, and records its requests', async () => {
    // pnpm (10, the last to run on Node 20) runs no package's build script unless the project
    // allows it: on Node 20 the profiler stores through the app's better-sqlite3, which must be
    // built (what the README says to do).
    const dir = app(manager, manager === 'pnpm' ? { 'pnpm-workspace.yaml': 'onlyBuiltDependencies:\n  - better-sqlite3\n' } : {});
    await install(dir);
    expect(readdirSync(path.join(dir, 'node_modules'))).toContain('express-web-profiler');
    const out = await served(dir);
    expect(out.driver).toBe('11.8.1');
    expect(out.resolved).toContain(path.join(dir, 'node_modules'));
    expect(out.status).toBe(200);
    expect(out.body).toEqual({ text: 'hello' });
    expect(out.token).toMatch(/^[0-9a-f]{6}$/);
    // The profile is stored and its db panel shows the app's query, through the app's own driver.
    expect(out.panel.status).toBe(200);
    expect(out.panel.text).toContain('SELECT text FROM greetings');
  }, 900_000);
});
