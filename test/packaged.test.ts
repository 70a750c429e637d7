import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import dc from 'node:diagnostics_channel';
import { tmpdir } from 'node:os';
import { execFile, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { cpSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, inject, it } from 'vitest';

/**
 * Apps shaped like the ones people have, each with the package installed from `npm pack` (what
 * the registry would serve, not src/) and run by its own runner: plain node for CommonJS, jest,
 * tsc. The package's own dependencies resolve from the project's node_modules, as npm would
 * install them beside it.
 */
const run = promisify(execFile);
/** The app's own better-sqlite3 on this Node (see fixtures/better-sqlite3.cjs). */
const betterSqlite3 = (createRequire(import.meta.url)('./fixtures/better-sqlite3.cjs') as { dir: string }).dir;
const APPS = path.resolve('test-artifacts', 'apps');
let tarball = '';
let packedFiles: string[] = [];

beforeAll(() => {
  const dir = path.resolve('test-artifacts', 'pack');
  mkdirSync(dir, { recursive: true });
  // npm test has built dist/ (npm pack alone builds first, in prepack: .ci/run packs a clean checkout).
  const [packed] = JSON.parse(execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })) as { filename: string; files: { path: string }[] }[];
  tarball = path.join(dir, packed.filename);
  packedFiles = packed.files.map((f) => f.path);
});

describe('the tarball', () => {
  it('holds dist/ in both module shapes with their types, views/ and setup/, and nothing of test/, bench/ or storage/', () => {
    for (const file of ['dist/index.js', 'dist/index.mjs', 'dist/index.d.ts', 'dist/index.d.mts', 'dist/cli.js', 'dist/storage/writer-thread.js', 'dist/testing/index.mjs', 'views/layout.eta', 'setup/vitest.mjs', 'package.json', 'README.md']) {
      expect(packedFiles).toContain(file);
    }
    expect(packedFiles.filter((f) => /^(test|bench|storage|src|scripts)\//.test(f) || f.endsWith('.map'))).toEqual([]);
  });
});

/**
 * A copy of the fixture with the packed profiler in its node_modules, the packages named in
 * `links` (name → a folder of the project's node_modules) linked there, and those in `copies`
 * copied there (a package that requires another, knex its driver, then finds the app's own copy;
 * jest's module map does not follow links), and `files` written.
 */
function install(fixture: string, links: Record<string, string> = {}, copies: Record<string, string> = {}, files: Record<string, string> = {}): string {
  const dir = path.join(APPS, `${fixture}-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  cpSync(path.resolve('test/fixtures/apps', fixture), dir, { recursive: true });
  const pkg = path.join(dir, 'node_modules', 'express-web-profiler');
  mkdirSync(pkg, { recursive: true });
  execFileSync('tar', ['xzf', tarball, '-C', pkg, '--strip-components=1']);
  for (const [name, target] of Object.entries(links)) symlinkSync(path.resolve('node_modules', target), path.join(dir, 'node_modules', name), 'dir');
  for (const [name, source] of Object.entries(copies)) cpSync(path.resolve('node_modules', source), path.join(dir, 'node_modules', name), { recursive: true });
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

const node = (dir: string, ...args: string[]) => run(process.execPath, args, { cwd: dir, timeout: 60_000, env: { ...process.env, NODE_ENV: 'development', MYSQL_URL: mysqlUrl } });

const mysqlUrl = inject('mysqlUrl');
if (!mysqlUrl) process.stderr.write(`\n!!! PACKAGED APP WITHOUT ITS DATABASE (knex on mysql2 3.11 not tried): ${inject('mysqlMissing')}\n\n`);

describe('a CommonJS Express 4 app with compression and its own catch-all error handler', () => {
  let out: any;
  beforeAll(async () => {
    const dir = install('cjs-express4', { express: 'express4', mysql2: 'mysql2-3.11' }, { knex: 'knex' });
    out = JSON.parse((await node(dir, 'check.js')).stdout);
  });

  it('loads the packed profiler with require()', () => {
    expect(out.resolved).toMatch(/[\\/]test-artifacts[\\/]apps[\\/]cjs-express4-\d+[\\/]node_modules[\\/]express-web-profiler[\\/]dist[\\/]index\.js$/);
    expect(out.express).toMatch(/^4\./);
  });

  it('an unknown route answers 404 in the app\'s own shape, through a handler that makes anything else a 500', () => {
    expect(out.missing.status).toBe(404);
    expect(JSON.parse(out.missing.body)).toEqual({ errors: { body: ['internal error'] } });
    expect(out.missing.headers['x-debug-token']).toMatch(/^[0-9a-f]{6}$/);
    // A browser gets the debug page.
    expect(out.missingHtml.status).toBe(404);
    expect(out.missingHtml.body).toContain('No route found for &quot;GET http://127.0.0.1:');
  });

  it('the exception panel shows the status the app sent, and the error\'s code', () => {
    expect(out.appError.status).toBe(404);
    expect(out.panels.appError.exception.data).toMatchObject({ status: 404, chain: [{ class: 'AppError', message: 'article nope not found', code: '404' }] });
    expect(out.panels.appError.exception.data.chain[0].status).toBeUndefined();
    // Its stack reads as bare: the router's frames name the router's own files, none the profiler's package.
    const frames = out.panels.appError.exception.data.chain[0].frames;
    expect(frames.some((f: any) => /[\\/]node_modules[\\/]express4?[\\/]lib[\\/]router[\\/]layer\.js$/.test(f.file))).toBe(true);
    expect(frames.filter((f: any) => /[\\/]node_modules[\\/]express-web-profiler[\\/]/.test(f.file))).toEqual([]);
    expect(out.panels.boom.exception.data).toMatchObject({ status: 500, chain: [{ class: 'TypeError', message: 'boom' }] });
    expect(out.panels.missing.exception.data).toMatchObject({ status: 404, chain: [{ class: 'NotFoundError', status: 404 }] });
    // body-parser's 400, which the app's handler answered 500: the status sent, and the error's own beside it.
    expect(out.badJson.status).toBe(500);
    expect(out.panels.badJson.exception.data).toMatchObject({ status: 500, errorStatus: 400, chain: [{ class: 'SyntaxError', status: 400 }] });
  });

  it('a gzip response body is shown decoded, its encoding said', () => {
    expect(out.articles.headers['content-encoding']).toBe('gzip');
    const body = out.panels.articles.response.data.body;
    expect(body).toMatchObject({ kind: 'json', encoding: 'gzip' });
    expect(body.json.articles).toHaveLength(20);
    // The toolbar still goes into a compressed HTML page.
    expect(out.page.headers['content-encoding']).toBe('gzip');
    expect(out.page.body).toContain('id="wp-wdt"');
  });

  it('a query value under a key that only contains a secret word is kept', () => {
    expect(out.panels.articles.request.data.url).toBe('/articles?author=conduit');
    expect(out.panels.articles.request.data.query).toEqual({ author: 'conduit' });
    expect(JSON.stringify(out.panels.articles.logs.data)).toContain('conduit');
  });

  it.skipIf(!mysqlUrl)('knex on the app\'s locked mysql2 3.11 has its queries, parameters and failures recorded', () => {
    expect(out.mysql2).toBe('3.11.3');
    expect(out.dbArticles.status).toBe(200);
    expect(JSON.parse(out.dbArticles.body)).toEqual({ articles: [{ slug: 'a', title: 'A' }, { slug: 'b', title: 'B' }], count: 2 });
    const { queries } = out.panels.dbArticles.db.data;
    // knex's probe of a new connection runs inside the request that opened it, and is its query too.
    expect(queries.map((q: any) => q.sql)).toEqual(['select version() as version', 'select `slug`, `title` from `articles` where `author` = \'conduit\' order by `slug` asc', 'select count(*) as `n` from `articles`']);
    // query() formats its values into the SQL: they are there, redacted with it, and not kept beside it.
    expect(queries[1]).toMatchObject({ rows: 2, caller: expect.stringMatching(/[\\/]app\.js:\d+$/) });
    expect(queries[1].params).toBeUndefined();
    expect(queries[2]).toMatchObject({ rows: 1, caller: expect.stringMatching(/[\\/]app\.js:\d+$/) });
    const broken = out.panels.dbBroken.db.data.queries;
    expect(broken).toHaveLength(1);
    // Streamed (knex.stream()): its SQL and the rows it gave.
    expect(JSON.parse(out.dbStream.body)).toEqual({ slugs: ['a', 'b'] });
    expect(out.panels.dbStream.db.data.queries).toMatchObject([{ sql: 'select `slug` from `articles`', rows: 2 }]);
    expect(broken[0].error).toMatchObject({ message: expect.stringContaining("Unknown column 'nope'"), code: 'ER_BAD_FIELD_ERROR' });
  });

  it('a GET that body-parser saw has no body in its profile', () => {
    expect(out.panels.articles.request.data.body).toBeUndefined();
  });
});

describe('an ES module app whose dependency requires the profiler', () => {
  it('import and require give one instance: one request context, one store', async () => {
    const dir = install('esm');
    const out = JSON.parse((await node(dir, 'check.js')).stdout);
    expect(out).toEqual({ same: true, transport: 'function', lines: ['from a CommonJS dependency'] });
  });
});

describe('the host process on this Node', () => {
  it('an app with its own better-sqlite3 serves, has its pages read, closes its profiler and collects garbage, three rounds, and exits normally', async () => {
    const { stdout } = await run(process.execPath, ['--expose-gc', path.resolve('test/fixtures/close-and-collect.mjs'), path.resolve('dist/index.js'), '3'], { timeout: 60_000 });
    expect(stdout.trim()).toBe('done 3');
  });
});

describe('a CommonJS project tested by jest with supertest', () => {
  // jest 26 (which apps still lock) has a module registry that knew no node: specifiers.
  // jest 26 with the Express and supertest of its day (Express 5 and supertest 7 require node: builtins too).
  it.each([
    ['30', 'jest30', { supertest: 'supertest' }, []],
    ['29', 'jest', { supertest: 'supertest' }, []],
    // Coverage (babel-plugin-istanbul) puts counters in the code and moves every line: the lines named are still the source's.
    ['29 with coverage', 'jest', { supertest: 'supertest' }, ['--coverage', '--coverageReporters=text-summary']],
    ['26', 'jest26', { supertest: 'supertest6', express: 'express4' }, []],
  ])('under jest %s its tests pass, and jest exits by itself', async (_version, jest, packages, options) => {
    // Copied: jest's module map does not follow a linked package.
    const dir = install('jest-cjs', {}, packages);
    // Each jest with its own node environment (the project's node_modules hold 29's at the top).
    const environment = createRequire(path.resolve('node_modules', jest, 'package.json')).resolve('jest-environment-node');
    const { stdout, stderr } = await node(dir, path.resolve('node_modules', jest, 'bin/jest.js'), '--ci', '--colors=false', `--testEnvironment=${environment}`, ...options);
    expect(stderr).toMatch(/Tests:\s+4 passed, 4 total/);
    expect(stdout + stderr).not.toMatch(/did not exit|open handle/i);
    // jest names where each console line came from: the app's line, not the profiler's.
    expect(stdout + stderr).toMatch(/hello from the route\s+at [^\n]*app\.js:10:/);
    expect(stdout + stderr).not.toMatch(/hello from the route\s+at [^\n]*express-web-profiler/);
  });
});

/** Whether this Node publishes each require() on its module.require channel. */
function publishesRequires(): boolean {
  let seen = false;
  const channel = dc.tracingChannel('module.require');
  const watcher = { start: () => (seen = true), end() {}, asyncStart() {}, asyncEnd() {}, error() {} };
  channel.subscribe(watcher);
  createRequire(import.meta.url)('../package.json');
  channel.unsubscribe(watcher);
  return seen;
}

describe('a NestJS 11 app compiled by tsc, with app.use(webProfiler()) in main.ts', () => {
  const nest = async (custom: boolean, first = false) => {
    // A library that runs the app's statements in a callback of its own, as ORMs do.
    const dir = install('nest', { 'better-sqlite3': betterSqlite3 }, {}, { 'node_modules/detached-orm/index.js': 'exports.later = (db, sql) => new Promise((resolve) => setImmediate(() => resolve(db.prepare(sql).all())));\n' });
    await node(dir, path.resolve('node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json');
    const { stdout } = await run(process.execPath, ['dist/main.js'], { cwd: dir, timeout: 60_000, env: { ...process.env, NODE_ENV: 'development', CUSTOM_LOGGER: custom ? '1' : '', PROFILER_FIRST: first ? '1' : '' } });
    // Nest's ConsoleLogger writes to stdout too: the app's report is the last line.
    return JSON.parse(stdout.trim().split('\n').pop()!);
  };
  let out: any;
  beforeAll(async () => {
    out = await nest(false);
  });

  it('every exception Nest\'s filters answer is on the exception panel with the status Nest sent', () => {
    const seen = (key: string) => [out[key].status, out[key].exception?.status, out[key].exception?.chain[0].class, out[key].exception?.chain[0].message];
    expect(seen('missingArticle')).toEqual([404, 404, 'NotFoundException', 'article 7 not found']);
    expect(seen('badId')).toEqual([400, 400, 'BadRequestException', 'Validation failed (numeric string is expected)']);
    expect(seen('invalid')).toEqual([400, 400, 'BadRequestException', 'Bad Request Exception']);
    expect(seen('unauthorized')).toEqual([401, 401, 'UnauthorizedException', 'no valid token']);
    expect(seen('boom')).toEqual([500, 500, 'Error', 'the articles table is gone']);
    expect(seen('noRoute')).toEqual([404, 404, 'NotFoundException', 'Cannot GET /nowhere']);
    expect(out.list.exception).toBeNull();
  });

  it('Nest\'s Logger lines are in the logs panel, their context as the logger\'s name', () => {
    const lines = (key: string) => out[key].logs.lines.map((l: any) => [l.level, l.channel, l.logger, l.message]);
    expect(lines('list')).toEqual([
      ['info', 'nest', 'ArticlesController', 'listing articles'],
      ['warn', 'nest', 'Static', 'a static line'],
      ['debug', 'nest', 'Timing', expect.stringMatching(/^took \d+ ms$/)],
    ]);
    expect(lines('missingArticle')).toEqual([['info', 'nest', 'ArticlesService', 'looking for article 7']]);
    expect(lines('boom')).toContainEqual(['error', 'nest', 'ExceptionsHandler', 'the articles table is gone']);
  });

  it('a guard\'s req.user names who made the request, and how they were known', () => {
    expect(out.authorized.status).toBe(200);
    expect(out.authorized.security.who).toEqual({ id: 3, username: 'nest-writer', roles: ['writer'], via: 'bearer token' });
    expect(JSON.stringify(out.authorized)).not.toContain('not-to-be-kept');
    expect(out.unauthorized.security?.who).toBeUndefined();
  });

  it('a statement with no line of the app\'s anywhere on its stack or the response\'s is given the route handler\'s name, marked as such', () => {
    expect(out.count.status).toBe(200);
    expect(out.count.db.queries).toMatchObject([{ sql: 'SELECT 1 AS n', caller: 'ArticlesController.count', callerFrom: 'handler' }]);
  });

  it('routes are named Controller.method; guards, pipes and interceptors are spans of their own', () => {
    const names = (key: string) => out[key].performance.timeline.map((s: any) => s.name);
    expect(out.list.routing.route).toBe('/articles');
    // The route and its handler, on the routing panel; the handler beside the URL in the list, and found by its search.
    expect(out.missingArticle.routing).toMatchObject({ route: '/articles/:id', handler: 'ArticlesController.findOne' });
    expect(out.search).toEqual([['/articles/abc', 'ArticlesController.findOne'], ['/articles/7', 'ArticlesController.findOne']]);
    expect(names('list')).toEqual(expect.arrayContaining(['route GET /articles', 'ArticlesController.findAll', 'interceptors TimingInterceptor']));
    expect(names('unauthorized')).toEqual(expect.arrayContaining(['ArticlesController.stats', 'guards TokenGuard']));
    expect(names('invalid')).toEqual(expect.arrayContaining(['ArticlesController.create', 'pipes ValidationPipe']));
    // A request-scoped controller's route goes through another handler of Nest's.
    expect(out.basket.status).toBe(200);
    expect(names('basket')).toEqual(expect.arrayContaining(['BasketController.show']));
    // The interceptor's span lasts as long as the handler it wraps.
    const timeline = out.list.performance.timeline;
    const interceptor = timeline.find((s: any) => s.name === 'interceptors TimingInterceptor');
    expect(interceptor.end - interceptor.start).toBeGreaterThan(0);
  });

  // Node publishes each require from 22.15 (not 20): a profiler made before Nest is loaded follows it there.
  it.skipIf(!publishesRequires())('made before Nest is loaded (a setup module imported first), it still names routes Controller.method and records Nest\'s exceptions and lines', async () => {
    const first = await nest(false, true);
    const names = first.list.performance.timeline.map((s: any) => s.name);
    expect(names).toEqual(expect.arrayContaining(['ArticlesController.findAll']));
    expect([first.missingArticle.status, first.missingArticle.exception?.chain[0].class]).toEqual([404, 'NotFoundException']);
    expect(first.list.logs.lines.map((l: any) => l.message)).toContain('listing articles');
  });

  it('linked from outside the app (@nestjs/core only where the app resolves it) and made after Nest loaded: the handler is named on the routing panel, the list and MCP', async () => {
    const dir = install('nest', { 'better-sqlite3': betterSqlite3 }, {}, { 'node_modules/detached-orm/index.js': 'exports.later = (db, sql) => new Promise((resolve) => setImmediate(() => resolve(db.prepare(sql).all())));\n' });
    // As npm link, a workspace or pnpm leave it: the package's real folder elsewhere, with its own dependencies and no Nest.
    const linked = path.join(tmpdir(), `ewp-linked-${process.pid}`);
    rmSync(linked, { recursive: true, force: true });
    cpSync(path.join(dir, 'node_modules', 'express-web-profiler'), linked, { recursive: true });
    rmSync(path.join(dir, 'node_modules', 'express-web-profiler'), { recursive: true });
    symlinkSync(linked, path.join(dir, 'node_modules', 'express-web-profiler'), 'dir');
    mkdirSync(path.join(linked, 'node_modules', '@modelcontextprotocol'), { recursive: true });
    for (const dep of ['eta', 'nanoid', 'stacktrace-parser', 'zod', '@modelcontextprotocol/sdk']) symlinkSync(path.resolve('node_modules', dep), path.join(linked, 'node_modules', dep), 'dir');
    symlinkSync(betterSqlite3, path.join(linked, 'node_modules', 'better-sqlite3'), 'dir');
    expect(() => createRequire(path.join(linked, 'dist', 'index.js')).resolve('@nestjs/core')).toThrow();
    await node(dir, path.resolve('node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json');
    const database = path.join(dir, 'profiles.sqlite');
    const { stdout } = await run(process.execPath, ['dist/main.js'], { cwd: dir, timeout: 60_000, env: { ...process.env, NODE_ENV: 'development', PROFILER_DB: database } });
    const linkedOut = JSON.parse(stdout.trim().split('\n').pop()!);
    expect(linkedOut.missingArticle.routing).toMatchObject({ route: '/articles/:id', handler: 'ArticlesController.findOne' });
    expect(linkedOut.search.map(([, label]: string[]) => label)).toEqual(['ArticlesController.findOne', 'ArticlesController.findOne']);
    const client = new Client({ name: 'packaged-test', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [path.join(linked, 'dist', 'cli.js'), 'mcp', '--db', database], stderr: 'pipe' }));
    try {
      const found = (await client.callTool({ name: 'search_requests', arguments: { operation: 'ArticlesController.findAll' } })) as { structuredContent?: { recorded: { requests: { url: string; label?: string }[] } } };
      expect(found.structuredContent!.recorded.requests.map((r) => [new URL(r.url).pathname, r.label])).toEqual([['/articles', 'ArticlesController.findAll']]);
    } finally {
      await client.close();
    }
  });

  it('with a logger of the app\'s own (useLogger), the lines land in the profile and the logger still gets them', async () => {
    const custom = await nest(true);
    expect(custom.list.logs.lines.map((l: any) => l.message)).toEqual(['listing articles', 'a static line', expect.stringMatching(/^took/)]);
    expect(custom.customLines).toEqual(expect.arrayContaining(['listing articles', 'a static line', 'looking for article 7']));
  });
});

describe('a CommonJS project tested by mocha', () => {
  it('loads the packed profiler, records, and mocha exits by itself', async () => {
    const dir = install('mocha-cjs');
    const { stdout } = await node(dir, path.resolve('node_modules/mocha/bin/mocha.js'), '--exit=false', 'app.spec.js');
    expect(stdout).toMatch(/2 passing/);
  });
});

describe('TypeScript compiled to CommonJS by tsc', () => {
  it('type-checks against the packed types, compiles and records', async () => {
    const dir = install('ts-cjs');
    // The same source type-checks under nodenext resolution (exports and their conditions) too.
    await node(dir, path.resolve('node_modules/typescript/bin/tsc'), '-p', 'tsconfig.nodenext.json');
    await node(dir, path.resolve('node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json');
    const out = JSON.parse((await node(dir, 'dist/main.js')).stdout);
    expect(out).toMatchObject({ status: 200, body: { hello: 'world', transport: 'function' } });
    expect(out.logs).toContain('hello from TypeScript');
    expect(out.logs).toContain('and from the logger');
  });
});

describe("an app's own tests read its profiles: vitest, jest 29 and node --test, with supertest", () => {
  // The runners' own variables (vitest's included) stay out of the project's runs.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(VITEST|NODE_ENV|WEB_PROFILER_)/.test(name)));
  const runner = (dir: string, ...args: string[]) => run(process.execPath, args, { cwd: dir, timeout: 90_000, env }).then(
    ({ stdout, stderr }) => ({ code: 0, out: plainText(stdout + stderr) }),
    (err: { code?: number; stdout?: string; stderr?: string }) => ({ code: err.code ?? -1, out: plainText(`${err.stdout ?? ''}${err.stderr ?? ''}`) }),
  );
  // eslint-disable-next-line no-control-regex
  const plainText = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, '');
  const links = { 'better-sqlite3': betterSqlite3, express: 'express' };

  it('vitest: profileOf, the matchers passing and failing with what ran, and a failed test showing the exception', async () => {
    const dir = install('in-tests', { ...links, supertest: 'supertest', vitest: 'vitest' });
    const { code, out } = await runner(dir, path.resolve('node_modules/vitest/vitest.mjs'), 'run', '--color=false');
    expect(out).toMatch(/Tests\s+1 failed \| 3 passed \(4\)/);
    expect(code).toBe(1);
    // The one failing on purpose: its report names the request, the exception, the app's frame, the log line and the profile.
    expect(out).toContain('The requests that failed during this test (express-web-profiler):');
    expect(out).toMatch(/GET http:\/\/127\.0\.0\.1:\d+\/orders\/7 answered 500\n\s+Error: the order service is down \(order 7\)\n\s+at .*app\.js:\d+/);
    expect(out).toContain('[info] looking up the order');
    expect(out).toMatch(/profile: http:\/\/127\.0\.0\.1:\d+\/_profiler\/[0-9a-f]{6}/);
  });

  // istanbul puts counters in the code vitest transforms, and moves every line; v8 coverage leaves the code as it is.
  it.each(['istanbul', 'v8'])('vitest with %s coverage: a refusal names the line of the app\'s source that sent it', async (provider) => {
    const dir = install('vitest-coverage', { ...links, supertest: 'supertest', vitest: 'vitest' });
    const { code, out } = await runner(dir, path.resolve('node_modules/vitest/vitest.mjs'), 'run', '--color=false', '--coverage.enabled', `--coverage.provider=${provider}`);
    expect(out).toMatch(/Tests\s+1 passed \(1\)/);
    expect(out).toMatch(/Statements\s*:/);
    expect(code).toBe(0);
  });

  it('jest 29: the same through its environment, and jest exits by itself (no open handle)', async () => {
    // Copied: jest's module map does not follow a linked package.
    const dir = install('in-tests', {}, { ...links, supertest: 'supertest' }, { 'jest.config.js': "module.exports = { testEnvironment: 'express-web-profiler/jest-environment', testMatch: ['**/posts.jest.test.js'] };\n" });
    const { code, out } = await runner(dir, path.resolve('node_modules/jest/bin/jest.js'), '--ci', '--colors=false', '--detectOpenHandles');
    expect(out).toMatch(/Tests:\s+1 failed, 3 passed, 4 total/);
    expect(code).toBe(1);
    expect(out).toMatch(/GET http:\/\/127\.0\.0\.1:\d+\/orders\/7 answered 500\n\s+Error: the order service is down \(order 7\)/);
    expect(out).not.toMatch(/did not exit|open handle/i);
    // Nothing of the profiler's own on the way (its ES-module hooks stay quiet where jest cannot load ES modules).
    expect(out).not.toContain('[web-profiler]');
  });

  it('node --test: profileOf and the node:assert functions', async () => {
    const dir = install('in-tests', { ...links, supertest: 'supertest' });
    const { code, out } = await runner(dir, '--test', '--test-reporter=tap', 'posts.node-test.mjs');
    expect(out).toMatch(/# pass 3\n# fail 0/);
    expect(code).toBe(0);
  });
});
