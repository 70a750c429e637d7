import { execFile } from 'node:child_process';
import { cpSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { readRows, tempDb } from './helpers.js';

/** A TypeScript app's statements and calls name its .ts lines, whether tsx runs it or tsc built it with source maps. */
const run = promisify(execFile);
const FIXTURE = path.resolve('test/fixtures/apps/ts-callers');
const source = readFileSync(path.join(FIXTURE, 'app.ts'), 'utf8').split('\n');
const lineOf = (marker: string) => source.findIndex((line) => line.includes(marker)) + 1;
const driver = (await import('./fixtures/better-sqlite3.cjs')).default as unknown as { dir: string };

async function callers(args: string[], cwd: string) {
  const database = tempDb();
  const env = { ...process.env, NODE_ENV: 'development', PROFILER: path.resolve('dist/index.js'), DRIVER: driver.dir, DB: database };
  const { stdout } = await run(process.execPath, args, { cwd, env, timeout: 60_000 });
  const { body, token } = JSON.parse(stdout.trim().split('\n').pop()!);
  expect(body).toEqual({ total: 42, count: 2, status: 200 });
  const row = readRows(database).find((r) => r.token === token)!;
  return { query: row.collectors.db.queries[0].caller as string, call: row.collectors.http_client.requests[0].caller as string };
}

describe('caller lines of a TypeScript app', () => {
  const expected = (file: string) => ({ query: `${file}:${lineOf("the query's line")}`, call: `${file}:${lineOf("the call's line")}` });

  it('under tsx: the .ts lines', async () => {
    expect(await callers(['--import', 'tsx', 'app.ts'], FIXTURE)).toEqual(expected(path.join(FIXTURE, 'app.ts')));
  });

  it('built by tsc with source maps, run with --enable-source-maps: the .ts lines', async () => {
    // Beside the project, whose node_modules the built app resolves express from.
    const out = path.resolve('test-artifacts', `ts-callers-${process.pid}`);
    await run(process.execPath, [path.resolve('node_modules/typescript/bin/tsc'), '-p', path.join(FIXTURE, 'tsconfig.json'), '--outDir', out], { timeout: 120_000 });
    cpSync(path.join(FIXTURE, 'package.json'), path.join(out, 'package.json'));
    expect(await callers(['--enable-source-maps', path.join(out, 'app.js')], FIXTURE)).toEqual(expected(path.join(FIXTURE, 'app.ts')));
  });
});
