import type { Request } from 'express';
import { hostname } from 'node:os';
import path from 'node:path';
import { SCHEMA_PATTERN } from './storage/location.js';
import type { Collector } from './recording/collect.js';

/** What a user may pass to webProfiler(). Every field is optional. */
export interface ProfilerOptions {
  /** Record requests and serve /_profiler. Default: on unless the environment says production (see isProduction). */
  enabled?: boolean;
  /** Debug mode: debug error pages, toolbar, X-Robots-Tag. Default: on unless the environment says production. */
  debug?: boolean;
  /**
   * Where profiles are stored: a SQLite file, ':memory:', or a postgres:// URL (a store several
   * instances share; needs the "pg" package). Default: WEB_PROFILER_DB or storage/profiler.sqlite
   * under the working directory.
   */
  database?: string;
  /** The PostgreSQL schema the profiler keeps its tables in (created if need be). Default: WEB_PROFILER_SCHEMA or web_profiler. */
  schema?: string;
  /** This instance's name, stored with each profile (the list shows and filters by it). Default: host name and pid, as host:pid. */
  instance?: string;
  /** Random hex characters of a token, 6 to 32. Default 6. On a shared (PostgreSQL) store a token has four more in front: its instance's slot. */
  tokenLength?: number;
  /** Largest request or response body kept, in bytes; beyond it the body is marked truncated. Default 64 KiB. */
  bodyLimit?: number;
  /** Field and header names (matched case-insensitively as substrings) whose values are redacted. */
  redactKeys?: string[];
  /** Retention: the most profiles kept. Default 10,000. */
  maxProfiles?: number;
  /** Retention: the oldest profile kept, in milliseconds. Default 2 days. */
  maxAge?: number;
  /** Who may see the profiler: it lets in exactly the requests for which it returns (or resolves to) `true`. Default: see docs/security.md, Access. */
  authorize?: (req: Request) => boolean | Promise<boolean>;
  /**
   * The key every client presents to see the profiler (header X-Profiler-Secret, or
   * ?_profiler_secret= once, exchanged for a cookie). Default: WEB_PROFILER_SECRET, else a key made
   * for this store (kept beside its SQLite file) and printed on stderr, with a link, at the first request.
   */
  secret?: string;
  /**
   * Let loopback clients in without the key. Only where nothing on this machine forwards other
   * clients to the app (no reverse proxy, dev-server proxy or tunnel): such a proxy's requests look
   * local. Default: WEB_PROFILER_TRUST_LOCAL=1, else off.
   */
  trustLocal?: boolean;
  /**
   * notFound answers a path that has routes for other methods with 405 Method Not Allowed and an
   * Allow header. Default: off, a 404 as bare Express answers it (the debug page names the
   * methods the path has).
   */
  methodNotAllowed?: boolean;
  /**
   * The app's host names besides loopback ones: a trusted local client may use them (DNS rebinding
   * guard), and the key presented on one of the app's hosts is carried on to these, so that it
   * opens the profiler and the toolbar on each.
   */
  allowedHosts?: string[];
  /** Editor link format for stack frames, e.g. 'vscode://file/%f:%l'. Off by default. */
  editorLink?: string;
  /** Where the profiler tells its own trouble (each once per episode). Default: stderr. */
  onError?: (message: string) => void;
  /** Milliseconds between storage flushes. Default 100. */
  flushInterval?: number;
  /** Panels of your own, shown after the core ones. */
  collectors?: Collector[];
  /** A query that takes at least this many milliseconds is marked slow. Default 100. */
  slowQuery?: number;
  /** Host names, besides loopback ones, whose calls from a recorded request carry X-Debug-Parent-Token. Default none. */
  linkHosts?: string[];
  /** Add a Server-Timing header (db, http, app) to the app's responses, for browser devtools. Default off: it is a header the app did not set. */
  serverTiming?: boolean;
  /** Keep the values of the locals each view is rendered with (redacted, within 8 KiB a render), not only their names. Default off. */
  viewLocals?: boolean;
  /**
   * The app's own files to pass over, as library code, when naming the line that ran a statement,
   * a call, a log line or an answer: its database wrapper, its logger, its HTTP client (Laravel
   * Debugbar's backtrace_exclude_paths). A string is a file or a folder, relative to the working
   * directory or absolute; a RegExp is tested on the file's path. Default none.
   */
  skipFrames?: (string | RegExp)[];
  /**
   * Requests not to record. `paths`: a string is a path and what lies under it (`/health` takes
   * `/health` and `/health/db`), a RegExp is tested on the path; `statuses`: responses with these
   * statuses are not stored. Default none: hiding 404s hides bugs.
   */
  exclude?: { paths?: (string | RegExp)[]; statuses?: number[] };
  /** Per request: the garbage collections while it was in flight and the heap used at its start and end. Default off: it costs about 4% of a hello route's CPU. */
  heapAndGc?: boolean;
  /**
   * Keep the prompts and answers of AI model calls (openai, @anthropic-ai/sdk, the ai SDK):
   * redacted, within 20 kB each. Default off: the panel shows models, tokens, timings, tool calls
   * and errors, and nothing of what was said.
   */
  aiContent?: boolean;
  /** Where a trace id links to, `%s` for the id: `http://localhost:16686/trace/%s` (Jaeger). Default: the profiles of that trace. */
  traceUrl?: string;
  /**
   * Who made a request, for apps with a scheme of their own: called once as the request ends, it
   * returns the fields that name the user (`id`, `username`, `email`, `name`, `roles`) and how they
   * were known (`via`: 'session', 'bearer token', 'API key', 'basic'; `key`: an API key's name,
   * never its value), or undefined. Synchronous. Default: read from passport's `req.user`,
   * express-jwt's and express-oauth2-jwt-bearer's `req.auth`, and the session (docs/panels.md, Who).
   */
  identify?: (req: Request) => Identified | undefined;
  /**
   * Add what each profile shows to the sums the insights page reads (docs/insights.md): its route,
   * statements, errors, calls, cache reads, messages and user, by the minute and the hour. Default
   * off: it costs the writer thread 25,000 to 45,000 instructions a request (never the request's thread).
   */
  insights?: boolean;
}

/** What identify() says of who made a request: any other field is left out. */
export interface Identified {
  id?: string | number;
  username?: string;
  email?: string;
  name?: string;
  roles?: string[];
  via?: string;
  key?: string;
}

export interface ResolvedOptions {
  enabled: boolean;
  debug: boolean;
  database: string;
  schema: string;
  instance: string;
  tokenLength: number;
  bodyLimit: number;
  redactKeys: string[];
  maxProfiles: number;
  maxAge: number;
  authorize: ((req: Request) => boolean | Promise<boolean>) | undefined;
  /** Set by webProfiler() when it is enabled: the key given, or the one it made. */
  secret: string | undefined;
  /** The profiler made its key (none was given): it prints a link that carries it. */
  keyMade: boolean;
  /** Where a key the profiler made is kept; undefined when it lives in this process only. */
  keyFile?: string;
  trustLocal: boolean;
  methodNotAllowed: boolean;
  allowedHosts: string[];
  editorLink: string | undefined;
  onError: (message: string) => void;
  flushInterval: number;
  /** The app's own panels. */
  collectors: Collector[];
  slowQuery: number;
  linkHosts: string[];
  serverTiming: boolean;
  viewLocals: boolean;
  skipFrames: (string | RegExp)[];
  traceUrl: string | undefined;
  identify: ((req: Request) => Identified | undefined) | undefined;
  insights: boolean;
  heapAndGc: boolean;
  aiContent: boolean;
  exclude: { paths: (string | RegExp)[]; statuses: number[] };
}

export const DEFAULT_REDACT_KEYS = [
  'password', 'passwd', 'pass', 'pwd', 'passphrase', 'secret', 'token', 'jwt', 'bearer', 'api_key', 'apikey', 'api-key',
  'auth', 'authorization', 'cookie', 'credential', 'private_key', 'privatekey', 'private-key', 'session', 'signature', 'sig',
];

const PRODUCTION = /^(prod|production)$/i;

/** Any of the variables apps use to name their environment saying production turns the profiler and debug mode off. */
export const isProduction = (env: NodeJS.ProcessEnv): boolean =>
  ['NODE_ENV', 'APP_ENV', 'ENVIRONMENT'].some((name) => PRODUCTION.test((env[name] ?? '').trim()));

/** Under a test runner: NODE_ENV=test (vitest, jest), or a file `node --test` runs. */
export const isTestRun = (env: NodeJS.ProcessEnv): boolean => (env.NODE_ENV ?? '').trim().toLowerCase() === 'test' || env.NODE_TEST_CONTEXT !== undefined;

export function resolveOptions(options: ProfilerOptions = {}, env: NodeJS.ProcessEnv = process.env): ResolvedOptions {
  const tokenLength = options.tokenLength ?? 6;
  if (!Number.isInteger(tokenLength) || tokenLength < 6 || tokenLength > 32) {
    throw new RangeError(`webProfiler: tokenLength must be an integer from 6 to 32, got ${tokenLength}`);
  }
  const schema = options.schema ?? (env.WEB_PROFILER_SCHEMA || 'web_profiler');
  if (!SCHEMA_PATTERN.test(schema)) {
    throw new RangeError(`webProfiler: schema must be a lowercase identifier (letters, digits, _), got ${JSON.stringify(schema)}`);
  }
  const instance = options.instance ?? `${hostname()}:${process.pid}`;
  if (typeof instance !== 'string' || instance.length === 0 || instance.length > 200) {
    throw new RangeError('webProfiler: instance must be a name of 1 to 200 characters');
  }
  return {
    enabled: options.enabled ?? !isProduction(env),
    debug: options.debug ?? !isProduction(env),
    // Under a test runner nothing is left behind: profiles live as long as the process.
    database: options.database ?? env.WEB_PROFILER_DB ?? (isTestRun(env) ? ':memory:' : path.resolve('storage', 'profiler.sqlite')),
    schema,
    instance,
    tokenLength,
    bodyLimit: options.bodyLimit ?? 64 * 1024,
    redactKeys: (options.redactKeys ?? DEFAULT_REDACT_KEYS).map((k) => k.toLowerCase()),
    maxProfiles: options.maxProfiles ?? 10_000,
    maxAge: options.maxAge ?? 2 * 24 * 3600 * 1000,
    authorize: options.authorize,
    secret: options.secret ?? (env.WEB_PROFILER_SECRET || undefined),
    keyMade: false,
    trustLocal: options.trustLocal ?? env.WEB_PROFILER_TRUST_LOCAL === '1',
    methodNotAllowed: options.methodNotAllowed ?? false,
    allowedHosts: (options.allowedHosts ?? []).map((h) => h.toLowerCase()),
    editorLink: options.editorLink,
    onError: options.onError ?? ((message) => process.stderr.write(`[web-profiler] ${message}\n`)),
    flushInterval: options.flushInterval ?? 100,
    collectors: options.collectors ?? [],
    slowQuery: options.slowQuery ?? 100,
    linkHosts: (options.linkHosts ?? []).map((h) => h.toLowerCase()),
    serverTiming: options.serverTiming ?? false,
    viewLocals: options.viewLocals ?? false,
    skipFrames: skipFramesOf(options.skipFrames),
    traceUrl: options.traceUrl,
    identify: typeof options.identify === 'function' ? options.identify : undefined,
    insights: options.insights ?? false,
    heapAndGc: options.heapAndGc ?? false,
    aiContent: options.aiContent ?? false,
    exclude: { paths: options.exclude?.paths ?? [], statuses: options.exclude?.statuses ?? [] },
  };
}

/** skipFrames as given, its paths made absolute; anything else is the app's mistake, said at once. */
function skipFramesOf(given: unknown): (string | RegExp)[] {
  if (given === undefined) return [];
  if (!Array.isArray(given) || !given.every((p) => (typeof p === 'string' && p !== '') || p instanceof RegExp)) {
    throw new TypeError('webProfiler: skipFrames must be an array of paths (strings) and RegExps');
  }
  return given.map((p) => (typeof p === 'string' ? path.resolve(p) : p));
}
