// The outside-app check: Express's own examples (expressjs/express, MIT), each answering the
// requests of Express's own acceptance tests, bare and with the profiler mounted first in every
// app they make. Every answer is what bare Express gives, byte for byte, apart from what the
// profiler is allowed to add (its three debug headers, the toolbar in an HTML page and the length
// and ETag that come with it); what differs between two bare runs (a session's id) is not compared.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const HARNESS = path.resolve('test/fixtures/express-examples/run.cjs');

interface Answer {
  method: string;
  path: string;
  status: number;
  headers: string[];
  body: string;
}

async function answers(mode: 'bare' | 'profiled'): Promise<{ failures: number; tests: number; answers: Answer[] }> {
  const { stdout } = await run(process.execPath, [HARNESS, mode], { env: { ...process.env, NODE_ENV: 'test' }, maxBuffer: 64 * 1024 * 1024, timeout: 120_000 });
  return JSON.parse(stdout.trim().split('\n').pop()!);
}

const DEBUG_HEADERS = new Set(['x-debug-token', 'x-debug-token-link', 'x-robots-tag', 'date']);
const TOOLBAR = /<div id="wp-wdt"[\s\S]*<\/script>(?=<\/body>)/;
/**
 * A stack the app prints (finalhandler's error page in development) names the frames it went
 * through, the profiler's among them: compared without its frames.
 */
const withoutFrames = (body: string) => body.replace(/(?:&nbsp;| )*at [^<\n]+(?:<br>|\n)?/g, '');

/** An HTTP date in a header's value (a cookie's Expires): the second the answer was made in, not what it says. */
const HTTP_DATE = /\b[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT\b/g;

const lines = (answer: Answer, without: Set<string>) => {
  const out: string[] = [];
  for (let i = 0; i + 1 < answer.headers.length; i += 2) if (!DEBUG_HEADERS.has(answer.headers[i].toLowerCase()) && !without.has(answer.headers[i].toLowerCase())) out.push(`${answer.headers[i]}: ${answer.headers[i + 1].replace(HTTP_DATE, '(date)')}`);
  return out;
};

describe("Express's own examples, answering Express's own acceptance tests", () => {
  it('answer with the profiler mounted exactly as bare: every test passes, and every answer is the same', async () => {
    const [bare, again, profiled] = [await answers('bare'), await answers('bare'), await answers('profiled')];
    expect([bare.failures, profiled.failures]).toEqual([0, 0]);
    expect(profiled.tests).toBe(bare.tests);
    expect(bare.tests).toBeGreaterThanOrEqual(100);
    expect(profiled.answers.map((a) => `${a.method} ${a.path}`)).toEqual(bare.answers.map((a) => `${a.method} ${a.path}`));
    const differing: unknown[] = [];
    let toolbars = 0;
    bare.answers.forEach((a, i) => {
      const b = profiled.answers[i];
      const toolbar = TOOLBAR.test(b.body);
      if (toolbar) toolbars++;
      // The toolbar, or a stack's frames, make the body longer: its length and ETag with it.
      const without = new Set(toolbar || withoutFrames(b.body) !== b.body ? ['content-length', 'etag'] : []);
      // What a second bare run answered to the same request (a loaded machine may have cut that run short: then bare's own, the stricter comparison).
      const twin = again.answers[i]?.method === a.method && again.answers[i]?.path === a.path ? again.answers[i] : a;
      const [mine, theirs, stable] = [lines(b, without), lines(a, without), lines(twin, without)];
      // Headers in the same order, each with bare's value where two bare runs agree on it.
      const names = (l: string[]) => l.map((h) => h.slice(0, h.indexOf(':')));
      const changed = theirs.filter((h, k) => h === stable[k] && mine[k] !== h);
      const body = withoutFrames(b.body.replace(TOOLBAR, ''));
      const bodyChanged = a.body === twin.body && withoutFrames(a.body) !== body;
      if (a.status !== b.status || names(mine).join() !== names(theirs).join() || changed.length > 0 || bodyChanged) {
        differing.push({ request: `${a.method} ${a.path}`, status: [a.status, b.status], headers: changed, body: bodyChanged ? [a.body.slice(0, 300), body.slice(0, 300)] : undefined });
      }
    });
    expect(differing).toEqual([]);
    // The check saw pages with the toolbar, and answers without.
    expect(toolbars).toBeGreaterThan(10);
    expect(bare.answers.length - toolbars).toBeGreaterThan(50);
  }, 300_000);
});
