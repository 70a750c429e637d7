import type { BodyData } from '../redaction/body.js';
import { REDACTED } from '../redaction/redact.js';
import type { Profile } from '../storage/profile.js';
import { replayOf } from './profile-view.js';
import { bodyOf, headersOf, Holes, jsString, target, type Holed, type Replayable } from './replay.js';

export type Runner = 'node' | 'vitest' | 'jest';
export const RUNNERS: Runner[] = ['node', 'vitest', 'jest'];

/** What the recorded response said, to be asserted again. */
export interface Answered {
  status: number;
  body?: BodyData;
}

/** Texts longer than this are checked by their length and start. */
const LONG_TEXT = 200;

/** A value that differs from one run to the next: asserted by its type, not its value. */
const VARYING_KEY = /(^|_|-)(id|uuid|token|nonce|time|timestamp|date|at|created|updated|expires?|expiry|exp|iat|nbf|etag|version)$|(Id|Uuid|Token|Time|Date|At|Expires)$/;
const VARYING_TEXT = /^(\d{4}-\d{2}-\d{2}[T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|(?=.*\d)(?=.*[A-Za-z])[\w+/=.~:-]{20,})$/i;

/**
 * The JSON a response answered, as a check: every value that stays the same from run to run as
 * itself, and those that vary (ids, times, tokens, values the profiler redacted) by their type.
 * `lines` are assertion statements on `body`.
 */
function checksOf(value: unknown, path: string, key: string, lines: string[]): void {
  const at = (k: string | number) => (typeof k === 'number' ? `${path}[${k}]` : /^[A-Za-z_$][\w$]*$/.test(k) ? `${path}.${k}` : `${path}[${JSON.stringify(k)}]`);
  if (value !== null && typeof value === 'object') {
    if (Array.isArray(value)) {
      lines.push(`assert.ok(Array.isArray(${path}), ${JSON.stringify(`${path} is an array`)});`);
      lines.push(`assert.equal(${path}.length, ${value.length});`);
      value.slice(0, 20).forEach((item, i) => checksOf(item, at(i), key, lines));
      return;
    }
    lines.push(`assert.equal(typeof ${path}, 'object');`);
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) checksOf(v, at(k), k, lines);
    return;
  }
  const varies = value === REDACTED || (VARYING_KEY.test(key) && value !== null && typeof value !== 'boolean') || (typeof value === 'string' && VARYING_TEXT.test(value));
  if (varies) lines.push(`assert.equal(typeof ${path}, ${JSON.stringify(typeof value)});`);
  else if (typeof value === 'string' && value.length > LONG_TEXT) {
    // A long text by its length and its start: the file stays readable.
    lines.push(`assert.equal(${path}.length, ${value.length});`, `assert.ok(${path}.startsWith(${JSON.stringify(value.slice(0, LONG_TEXT))}), ${JSON.stringify(`${path} starts as recorded`)});`);
  } else lines.push(`assert.deepEqual(${path}, ${JSON.stringify(value)});`);
}

/**
 * A recorded request as a test file that sends it again to `process.env.BASE_URL` (APP_URL under
 * vitest) and asserts the status it got and, for a JSON answer, its body. What the profiler
 * redacted is read from `process.env.WP_SECRET_n`: no secret is written in the file. `served` is
 * the app's origin, the default BASE_URL: the origin the profiler is read on, or the one an MCP
 * client was told. Without it the file has no default and sends nothing until BASE_URL is set:
 * the recorded Host is what the client sent, which anyone can choose, so it is only named.
 */
export function asTest(r: Replayable, answered: Answered, runner: Runner, served: string | undefined, token: string): string {
  const holes = new Holes();
  const notes: string[] = [];
  const url = new URL(served === undefined ? recordedPath(r.url) : target(r, served, notes), 'http://app.invalid');
  if (served === undefined) notes.push(`It was recorded as sent to ${JSON.stringify(originOf(r.url))}, the Host its client gave (anyone can give any): not used. Set ${runner === 'vitest' ? 'APP_URL' : 'BASE_URL'} to your app's origin.`);
  const path = jsString(holes.cut(url.pathname + url.search, 'url'));
  const headers = headersOf(r.headers, holes)
    // Cookies of a browser's session, and the profiler's own, are not the request's to send again.
    .filter(([name]) => !/^(cookie|x-debug-|x-profiler-|sec-|upgrade-insecure-requests$|if-none-match$|if-modified-since$)/i.test(name))
    .map(([name, h]) => {
      const value: Holed = { parts: [h.parts[0].slice(name.length + 2), ...h.parts.slice(1)], vars: h.vars };
      return `      ${JSON.stringify(name)}: ${jsString(value)},`;
    });
  const body = bodyOf(r.body, holes);
  if (body.note) notes.push(`Note: ${body.note}.`);
  const method = r.method.toUpperCase();
  const checks: string[] = [`assert.equal(res.status, ${answered.status}, \`${method} answered \${res.status}, recorded ${answered.status}\`);`];
  const json = answered.body?.kind === 'json' && !answered.body.truncated && method !== 'HEAD' ? answered.body.json : undefined;
  if (json !== undefined) {
    checks.push('const body = await res.json();');
    checksOf(json, 'body', '', checks);
  }
  const head = runner === 'jest'
    ? ["const assert = require('node:assert/strict');"]
    : [runner === 'node' ? "import { test } from 'node:test';" : "import { test } from 'vitest';", "import assert from 'node:assert/strict';"];
  const run = runner === 'node' ? `node --test ${fileOf(token, runner)}` : runner === 'vitest' ? `npx vitest run ${fileOf(token, runner)}` : `npx jest ${fileOf(token, runner)}`;
  // Vite (so vitest) sets BASE_URL to its own base path, '/': there, APP_URL says where the app is.
  const variable = runner === 'vitest' ? 'APP_URL' : 'BASE_URL';
  const lines = [
    `// Profile ${token}: ${method} ${url.pathname} answered ${answered.status}. Made by express-web-profiler.`,
    `// Run it against the app: ${variable}=${served ?? 'http://localhost:3000'} ${run}`,
    ...notes.map((n) => `// ${n}`),
    ...head,
    '',
    served === undefined ? `const BASE_URL = process.env.${variable};` : `const BASE_URL = process.env.${variable} || ${JSON.stringify(served)};`,
    ...holes.legend.map(([name, field]) => `// ${field}: redacted by the profiler; set ${name} to send it.\nconst ${name} = process.env.${name} ?? '';`),
    '',
    `test(${JSON.stringify(`${method} ${url.pathname} answers ${answered.status}`)}, async () => {`,
    ...(served === undefined ? [`  assert.ok(BASE_URL, ${JSON.stringify(`Set ${variable} to the app's origin (${variable}=http://localhost:3000): nothing is sent without it.`)});`] : []),
    `  const res = await fetch(new URL(${path}, BASE_URL), {`,
    `    method: ${JSON.stringify(method)},`,
    ...(headers.length > 0 ? ['    headers: {', ...headers.map((h) => `  ${h}`), '    },'] : []),
    ...(body.holed ? [`    body: ${jsString(body.holed)},`] : []),
    "    redirect: 'manual',",
    '  });',
    ...checks.map((c) => `  ${c}`),
    '});',
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * The name a runner finds by default, in a CommonJS and an ES module project alike: jest's default
 * testMatch has no `.cjs`, and jest runs a `.js` test as CommonJS whatever the package's type
 * (the file requires); node --test and vitest take `.mjs`.
 */
const fileOf = (token: string, runner: Runner) => `${token}.test.${runner === 'jest' ? 'js' : 'mjs'}`;

/** The path and query of a recorded URL, whatever its origin. */
function recordedPath(recorded: string): string {
  try {
    const url = new URL(recorded);
    return url.pathname + url.search;
  } catch {
    return '/';
  }
}

const originOf = (recorded: string): string => {
  try {
    return new URL(recorded).origin;
  } catch {
    return recorded;
  }
};

/** A stored request's test file and the name to give it, for a page or the MCP tool; undefined for a command. */
export function testOf(profile: Profile, runner: Runner, served: string | undefined): { file: string; text: string } | undefined {
  const target = replayOf(profile);
  if (target === undefined) return undefined;
  const response = profile.collectors.response as { body?: BodyData } | undefined;
  return { file: fileOf(profile.token, runner), text: asTest(target, { status: profile.status, body: response?.body }, runner, served, profile.token) };
}
