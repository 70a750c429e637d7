import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { panelOptionsOf, readProfile } from '../collectors/index.js';
import { resolveOptions } from '../options.js';
import { isToken } from '../recording/token.js';
import { withoutPassword } from '../storage/location.js';
import { openReader } from '../storage/open.js';
import type { ProfileReader } from '../storage/reader.js';
import { SCHEMA_PATTERN } from '../storage/location.js';

export interface Io {
  out(line: string): void;
  err(line: string): void;
  /** Output goes to a terminal: `tail` colours it. */
  tty?: boolean;
}

const USAGE = `usage: web-profiler <command> [options]

  list  [--limit N] [--json]          latest profiles, newest first (default 20)
  show  <token> [--json] [--cpu]      one profile: summary, exception and log (--cpu: its
                                      CPU profile's top functions by self time)
  purge (--older-than 2d | --all)     delete profiles (units: s, m, h, d)
  stats [--json]                      count, time span and file size
  tail  [--json]                      each request as it is stored, one line a request,
                                      coloured by status (also from other processes)
  mcp                                 a read-only MCP server on stdio, for coding agents
                                      (tools: search_requests, get_profile, latest_errors, insights)

  --db FILE|URL    the SQLite file, or a postgres:// URL (default: WEB_PROFILER_DB,
                   else storage/profiler.sqlite); a URL with a password belongs in
                   WEB_PROFILER_DB or --db-file, not on the command line (the process
                   list and MCP configs show it)
  --db-file PATH   a file holding the database URL (its first line)
  --schema NAME    the PostgreSQL schema (default: WEB_PROFILER_SCHEMA, else web_profiler)`;

const DURATION = /^(\d+)(s|m|h|d)$/;
const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** The CLI, as a function: returns the exit code (`tail`: once `stop` aborts, or on SIGINT from bin). */
export function run(argv: string[], io: Io, env: NodeJS.ProcessEnv = process.env, stop?: AbortSignal): number | Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        db: { type: 'string' },
        'db-file': { type: 'string' },
        schema: { type: 'string' },
        limit: { type: 'string' },
        json: { type: 'boolean' },
        'older-than': { type: 'string' },
        all: { type: 'boolean' },
        cpu: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    io.err(`${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const [command, arg] = positionals;
  if (values.help || !command) {
    (values.help ? io.out : io.err)(USAGE);
    return values.help ? 0 : 2;
  }
  let fromFile: string | undefined;
  if (values['db-file'] !== undefined) {
    try {
      fromFile = readFileSync(values['db-file'], 'utf8').split(/\r?\n/)[0].trim();
    } catch (err) {
      io.err(`cannot read --db-file: ${(err as Error).message}`);
      return 2;
    }
  }
  if (values.db !== undefined && withoutPassword(values.db) !== values.db) {
    io.err('warning: --db carries a password, which the process list (and an MCP client\'s config) shows: give the URL in WEB_PROFILER_DB or --db-file instead');
  }
  const file = values.db ?? fromFile ?? env.WEB_PROFILER_DB ?? path.resolve('storage', 'profiler.sqlite');
  const schema = values.schema ?? (env.WEB_PROFILER_SCHEMA || 'web_profiler');
  if (!SCHEMA_PATTERN.test(schema)) {
    io.err('--schema takes a lowercase identifier (letters, digits, _)');
    return 2;
  }
  const where = withoutPassword(file);
  if (command === 'mcp') return mcpCommand(file, schema, where, io, stop);
  let store: ProfileReader;
  try {
    store = openReader(file, schema);
  } catch (err) {
    io.err(`cannot open ${where}: ${(err as Error).message}`);
    return 1;
  }
  if (command === 'tail') return tail(store, io, Boolean(values.json), stop);
  return runCommand(store, command, arg, values, io).catch((err: Error) => {
    io.err(`cannot read ${where}: ${err.message}`);
    return 1;
  }).finally(() => store.close());
}

type Values = { limit?: string; json?: boolean; 'older-than'?: string; all?: boolean; cpu?: boolean };

/**
 * Recorded text as a terminal shows it: control characters (escape sequences that set the
 * clipboard or the title, clear the screen, or a newline that forges a line) spelled out, never
 * sent. What a client sent is data on the screen, as on the pages.
 */
const shown = (value: unknown): string =>
  String(value ?? '').replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

async function runCommand(store: ProfileReader, command: string, arg: string | undefined, values: Values, io: Io): Promise<number> {
  switch (command) {
    case 'list': {
      const limit = values.limit === undefined ? 20 : Number(values.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) {
        io.err('--limit takes a whole number from 1 to 10000');
        return 2;
      }
      const rows = await store.find({ limit });
      if (values.json) io.out(JSON.stringify(rows, null, 2));
      else if (rows.length === 0) io.out('no profiles');
      else for (const r of rows) io.out(`${r.token}  ${outcome(r).padEnd(3)}  ${shown(r.method).padEnd(6)} ${new Date(r.time).toISOString()}  ${`${r.duration.toFixed(1)}ms`.padStart(9)}  ${shown(r.url)}${store.shared && r.instance ? `  (${shown(r.instance)})` : ''}`);
      return 0;
    }
    case 'show': {
      if (!isToken(arg)) {
        io.err('show takes a token: 6 to 32 lowercase hex characters');
        return 2;
      }
      const profile = await readProfile(store, arg, panelOptionsOf(resolveOptions({ enabled: true })));
      if (!profile) {
        io.err(`no profile for token ${arg}`);
        return 1;
      }
      if (values.json) {
        io.out(JSON.stringify(profile, null, 2));
        return 0;
      }
      io.out(`${profile.token}  ${shown(profile.method)} ${shown(profile.url)}`);
      io.out(`${profile.type === 'command' ? `exit code ${profile.status}` : `status ${profile.status}`}, ${profile.duration} ms${profile.ip ? `, ${shown(profile.ip)}` : ''}, ${new Date(profile.time).toISOString()}${profile.instance ? `, served by ${shown(profile.instance)}` : ''}`);
      const c = profile.collectors as Record<string, any>;
      if (c.routing?.route) io.out(`route ${shown(c.routing.route)}`);
      for (const [i, e] of (c.exception?.chain ?? []).entries()) {
        io.out(`${i === 0 ? '\nexception' : 'caused by'}: ${shown(e.class)}: ${shown(e.message)}`);
        const where = e.frames.find((f: { kind: string }) => f.kind === 'app') ?? e.frames[0];
        if (where) io.out(`    at ${shown(where.fn)} (${shown(where.file)}:${where.line})`);
      }
      if (values.cpu) {
        const cpu = c.cpu as { busy?: boolean; samples?: number; duration?: number; functions?: { name: string; file: string; line: number; self: number; total: number }[] } | undefined;
        if (!cpu?.functions) io.out(cpu?.busy ? '\ncpu: not profiled (another request was)' : '\ncpu: no CPU profile (ask with the header X-Debug-Profile: cpu)');
        else {
          io.out(`\ncpu: ${cpu.samples} samples over ${cpu.duration} ms; top functions by self time:`);
          for (const f of cpu.functions.slice(0, 15)) io.out(`  ${`${f.self.toFixed(1)}ms`.padStart(9)} ${`${f.total.toFixed(1)}ms`.padStart(9)}  ${shown(f.name)}${f.file ? `  ${shown(f.file)}:${f.line}` : ''}`);
        }
      }
      const lines = c.logs?.lines ?? [];
      if (lines.length) io.out('\nlog:');
      for (const l of lines) io.out(`  ${new Date(l.time).toISOString().slice(11, 23)} ${shown(l.level).toUpperCase().padEnd(5)} ${shown(l.message)}`);
      return 0;
    }
    case 'purge': {
      if (Boolean(values.all) === Boolean(values['older-than'])) {
        io.err('purge takes one of --older-than <2d> or --all');
        return 2;
      }
      let before: number | undefined;
      if (values['older-than']) {
        const m = DURATION.exec(values['older-than']);
        if (!m) {
          io.err('--older-than takes a number and a unit: 30m, 12h, 2d');
          return 2;
        }
        before = Date.now() - Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
      }
      io.out(`purged ${await store.purge(before)} profiles`);
      return 0;
    }
    case 'stats': {
      const s = await store.stats();
      if (values.json) io.out(JSON.stringify(s, null, 2));
      else {
        io.out(`${s.file.includes('://') ? 'database' : 'file    '}  ${s.file}`);
        io.out(`profiles  ${s.profiles}`);
        io.out(`oldest    ${s.oldest ? new Date(s.oldest).toISOString() : '-'}`);
        io.out(`newest    ${s.newest ? new Date(s.newest).toISOString() : '-'}`);
        io.out(`size      ${(s.bytes / 1024).toFixed(0)} KiB`);
      }
      return 0;
    }
    default:
      io.err(`unknown command "${command}"\n\n${USAGE}`);
      return 2;
  }
}

const POLL_MS = 250;
const COLOURS = { server: 31, client: 33, redirect: 36, ok: 32 } as const;

const colourOf = (p: { type: string; status: number }) => (p.type === 'command' ? (p.status === 0 ? COLOURS.ok : COLOURS.server) : p.status >= 500 ? COLOURS.server : p.status >= 400 ? COLOURS.client : p.status >= 300 ? COLOURS.redirect : COLOURS.ok);
/** A request's status; a command's exit code, said as such. */
const outcome = (p: { type: string; status: number }) => (p.type === 'command' ? `exit ${p.status}` : String(p.status));

/** The live list in a terminal: what the file gains, from this process or any other that writes it. */
async function tail(store: ProfileReader, io: Io, json: boolean, stop: AbortSignal | undefined): Promise<number> {
  let last: number;
  try {
    last = await store.lastId();
  } catch (err) {
    io.err(`cannot read ${store.location}: ${(err as Error).message}`);
    await store.close();
    return 1;
  }
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    let ended = false;
    const poll = async () => {
      try {
        for (const { id, ...p } of await store.since(last, { limit: 500 })) {
          last = id;
          if (json) {
            io.out(JSON.stringify(p));
            continue;
          }
          const status = io.tty ? `\x1b[${colourOf(p)}m${outcome(p)}\x1b[0m` : outcome(p);
          io.out(`${new Date(p.time).toISOString().slice(11, 19)}  ${status}  ${shown(p.method).padEnd(6)} ${`${p.duration.toFixed(1)}ms`.padStart(9)}  ${p.token}  ${shown(p.url)}`);
        }
      } catch (err) {
        io.err(`cannot read ${store.location}: ${(err as Error).message}`);
      }
      if (!ended) timer = setTimeout(poll, POLL_MS);
    };
    timer = setTimeout(poll, POLL_MS);
    const end = () => {
      ended = true;
      clearTimeout(timer);
      void Promise.resolve(store.close()).then(() => resolve(0));
    };
    if (stop?.aborted) end();
    else stop?.addEventListener('abort', end, { once: true });
  });
}

/** The MCP SDK is an optional dependency: an app that only mounts the middleware never installs it. */
async function mcpCommand(file: string, schema: string, where: string, io: Io, stop?: AbortSignal): Promise<number> {
  let mcp: typeof import('./mcp.js');
  try {
    mcp = await import('./mcp.js');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'MODULE_NOT_FOUND' && code !== 'ERR_MODULE_NOT_FOUND') throw err;
    io.err(`the MCP server needs the optional packages @modelcontextprotocol/sdk and zod: npm install --save-dev @modelcontextprotocol/sdk zod\n(${(err as Error).message.split('\n')[0]})`);
    return 1;
  }
  return mcp.serveMcp(file, schema, stop).then(() => 0, (err: Error) => {
    io.err(`cannot serve ${where}: ${(err as Error).message}`);
    return 1;
  });
}
