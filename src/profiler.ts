import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express';
import { onceEach } from './recording/collect.js';
import { resolveOptions, type ProfilerOptions, type ResolvedOptions } from './options.js';
import { contextOf } from './recording/context.js';
import { captureConsole, logger, pinoHttpLoaded } from './recording/logger.js';
import { hookLoadedRouters } from './recording/layers.js';
import { runInFront } from './recording/front.js';
import { kProfileCpu, recorder, requestFinished } from './recording/recorder.js';
import { cpuAsked, startCpu } from './recording/cpu.js';
import { checkAccess } from './web/access.js';
import { announcesKey, keyLink, linkWithKey, madeAccessKey } from './web/access-key.js';
import { capture, captureCommand } from './recording/capture.js';
import { errorHandler } from './web/error-handler.js';
import { notFound } from './web/not-found.js';
import { laneTokenSource, longLength, sharedTokenSource, slotPrefix } from './recording/token.js';
import { pageStorage, storedAt } from './storage/open.js';
import type { ProfileReader } from './storage/reader.js';
import { ProfileWriter } from './storage/writer.js';
import { profilerPages } from './web/profiler-pages.js';
import { toolbarInjector } from './web/toolbar.js';
import { followLoads, instrumentBuiltins, instrumentLoaded } from './instruments/index.js';
import { hookEsmNodemailer, mailTransport } from './instruments/nodemailer.js';
import { hookEsmAiSdks } from './instruments/ai-sdks.js';
import { recordAiSdk } from './instruments/ai-telemetry.js';
import { recordViews } from './instruments/views.js';
import { answer, KEPT_FAILURES, type Failure, type Readable } from './testing/registry.js';
import { corePanels, panelOptionsOf, readProfile, type PanelInfo } from './collectors/index.js';
import type { RecorderSettings, WorkContext } from './recording/context.js';
import { commandStarted, runCommand } from './recording/command.js';
import { hookEsmDrizzle } from './instruments/drizzle.js';
import { instrumentNest } from './instruments/nestjs.js';
import { skipFrames } from './recording/caller.js';
import { instrumentWinston } from './instruments/winston-writes.js';
import { instrumentLog4js } from './instruments/log4js.js';
import { watchValidations } from './instruments/validation-hooks.js';
import { ExplainRegistry } from './web/explain.js';
import { appInfo } from './recording/app-info.js';
import { recordHttpCalls } from './instruments/http-client.js';
import { recordPino } from './instruments/pino.js';
import { bullmqTelemetry } from './instruments/bullmq.js';
import { spanProcessor } from './instruments/otel.js';
import { recordGraphqlResolvers } from './instruments/graphql.js';
import { hookEsmI18next } from './instruments/i18next.js';

type BullmqTelemetry = ReturnType<typeof bullmqTelemetry>;

export interface WebProfiler extends RequestHandler {
  /** Mount after the app's routes: answers requests no route took. */
  notFound: RequestHandler;
  /** Mount last: records the error and renders the debug exception page. */
  errorHandler: ErrorRequestHandler;
  readonly options: ResolvedOptions;
  /** The store the pages read (SQLite answers at once, PostgreSQL with promises), or undefined while it cannot be opened (or the profiler is off). */
  store(): ProfileReader | undefined;
  /** Write waiting profiles now (tests, shutdown). Returns how many were written. */
  flush(): number;
  /** Flush and close the store. */
  close(): void;
  /**
   * Runs fn (sync or async) as a command with a profile of its own (`type=command`): its queries,
   * calls, logs and exception, as a request's. Returns what fn returns and passes its error on.
   * Started inside a request or another command, it is linked to it.
   */
  run<T>(command: string | RunOptions, fn: () => T): T;
  /**
   * BullMQ's `telemetry` option, for the app's queues and workers (`new Worker(name, fn, {
   * connection, telemetry: profiler.bullmq() })`): each job processed is a command profile linked
   * to the request that queued it. Undefined while the profiler is off (BullMQ then traces nothing).
   */
  bullmq(): BullmqTelemetry | undefined;
  /**
   * An OpenTelemetry SpanProcessor for the app's tracer provider (`new NodeTracerProvider({
   * spanProcessors: [profiler.spanProcessor(), …] })`): spans that run inside a request or
   * command join its profile. Does nothing while the profiler is off.
   */
  spanProcessor(): ReturnType<typeof spanProcessor>;
  /** Undefined while the profiler is off. */
  readonly [kCommands]: { settings: RecorderSettings; nextToken: () => string } | undefined;
  /** A nodemailer transport that delivers nothing: each message shows in its request's profile (`nodemailer.createTransport(profiler.mailTransport())`). */
  mailTransport(): ReturnType<typeof mailTransport>;
  /**
   * The address that opens the profiler under `origin` (`http://localhost:8000`), carrying the key
   * the profiler made when it made one: for the app's own start-up banner, after which the
   * profiler prints no link of its own at the first request. Undefined while it is off.
   */
  link(origin: string): string | undefined;
}

/** What starts commands outside run() (the script hook, BullMQ's telemetry): the profiler's own, not the app's. */
export const kCommands = Symbol('web-profiler.commands');

export interface RunOptions {
  name: string;
  /** The profile this run belongs to (a token): by default the request or command it starts in. */
  parent?: string | null;
  /** Record a CPU profile of it (one at a time per process, at most 10 s). */
  cpu?: boolean;
}


/** Read from req.url, not req.path: this runs on every request and parsing the URL is not free. */
const isProfilerPath = (url: string) =>
  url.startsWith('/_') && /^\/(_profiler(\/|\?|$)|_wdt\/)/.test(url);

/** The core panels' ids, and the CPU profile stored beside its panel. */
const RESERVED_PANEL_IDS = new Set([...corePanels.map((p) => p.id), 'cpuprofile']);

/** Every panel of a profile in menu order: the core ones, then the app's, which cannot take a core panel's id. */
function panelsOf(collectors: ResolvedOptions['collectors']): PanelInfo[] {
  for (const { id } of collectors) {
    if (RESERVED_PANEL_IDS.has(id)) throw new RangeError(`webProfiler: a collector's id cannot be "${id}", which is a core panel's`);
  }
  return [...corePanels, ...collectors];
}

export function webProfiler(userOptions: ProfilerOptions = {}): WebProfiler {
  const resolved = resolveOptions(userOptions);
  const panels = panelsOf(resolved.collectors);
  if (!resolved.enabled) return assemble(resolved);
  // The pages read through a connection of this thread's own; the writer thread tells any trouble.
  const database = storedAt(resolved.database);
  const options = withKey(resolved, database);
  const { maxProfiles, maxAge, flushInterval, debug, bodyLimit, redactKeys, schema, instance } = options;
  const started = Date.now();
  const writer = new ProfileWriter({ database, schema, instance, maxProfiles, maxAge, flushInterval, debug, bodyLimit, redactKeys, insights: options.insights, started }, options.onError);
  const storage = pageStorage(database, schema, (token) => writer.taken.add(token));
  const tellOwn = onceEach(options.onError);
  skipFrames(options.skipFrames);
  // A zod the app loads from now on is followed without the hooks entry (where Node can).
  watchValidations({ valibot: false });
  captureConsole();
  hookLoadedRouters();
  recordHttpCalls(tellOwn);
  recordPino(tellOwn);
  recordGraphqlResolvers();
  recordAiSdk();
  instrumentBuiltins(tellOwn);
  const findDrivers = () => {
    instrumentLoaded(tellOwn);
    instrumentNest(tellOwn);
    instrumentWinston();
    instrumentLog4js();
  };
  findDrivers();
  followLoads(findDrivers);
  // An app that imports nodemailer 10 or drizzle-orm as ES modules runs copies no require cache lists.
  void hookEsmNodemailer(tellOwn);
  void hookEsmDrizzle(tellOwn);
  void hookEsmAiSdks(tellOwn);
  void hookEsmI18next(tellOwn);
  const explainable = new ExplainRegistry();
  let appDescribed = false;
  const excludedStatuses = options.exclude.statuses;
  const nextToken = storage.shared ? sharedTokenSource(options.tokenLength, writer.taken, writer.slot) : laneTokenSource(options.tokenLength, writer.taken, writer.slot);
  const record = recorder({
    debug,
    bodyLimit,
    linkHosts: options.linkHosts,
    nextToken,
    appSeen: (app) => {
      findDrivers();
      recordViews(app);
      // The config panel describes the first app the profiler serves (an app it sees later is mounted in it, or called by it).
      if (!appDescribed) writer.describeApp(appInfo(app));
      appDescribed = true;
    },
    done: (ctx) => {
      if (excludedStatuses.length > 0 && excludedStatuses.includes(ctx.res.statusCode)) return;
      writer.push(capture(ctx, options.collectors, options, tellOwn));
      if (ctx.inside !== undefined) explainable.keep(ctx.token, ctx.inside.queries);
      if (ctx.res.statusCode >= 500 || ctx.error !== undefined) noteFailure(failures, ctx, ctx.res.statusCode);
    },
    commandDone: (ctx) => {
      writer.push(captureCommand(ctx));
      if (ctx.inside !== undefined) explainable.keep(ctx.token, ctx.inside.queries);
      if (ctx.error !== undefined || ctx.command!.exitCode !== 0) noteFailure(failures, ctx, ctx.command!.exitCode ?? 1);
    },
    serverTiming: options.serverTiming,
    viewLocals: options.viewLocals,
    heapAndGc: options.heapAndGc,
    aiContent: options.aiContent,
    inject: debug ? toolbarInjector(tellOwn) : undefined,
    failed: (err) => tellOwn(`recording a request failed: ${(err as Error)?.message ?? err}`),
  });
  const pages = profilerPages({
    options,
    started,
    panels,
    explainable,
    // What waits on this thread is handed over; a page that asks for what is not stored yet has it written now (settle).
    store: () => {
      writer.handoff();
      return storage.read();
    },
    // Responses the app has ended whose 'close' has not come yet (a loaded loop) are finished first.
    settle: () => {
      record.finishEnded();
      return writer.settle();
    },
    behind: () => writer.behind,
    // A shared store's tokens carry this instance's slot in front of what the bitmap holds.
    drew: (token) => (storage.shared ? drewShared(token, writer, options.tokenLength) : writer.taken.has(token)),
    finished: requestFinished,
  });
  const failures: Failure[] = [];
  // What the app's tests read (express-web-profiler/testing): a profile at once, and the requests that failed.
  const readable: Readable = {
    async read(token) {
      // A request whose work after its response still runs is read once that work is done (within the bound it has).
      if (record.lingers(token)) await requestFinished(token, 5_000);
      // Written at once, as flush() writes (a test process may have nothing else keeping it alive while it waits).
      record.finishEnded();
      writer.flush();
      const store = storage.read();
      return store && readProfile(store, token, panelOptionsOf(options));
    },
    failures(since) {
      record.finishEnded();
      return failures.filter((f) => f.time >= since);
    },
  };
  const unanswer = answer(readable);
  let telemetry: BullmqTelemetry | undefined;
  const run = <T>(command: string | RunOptions, fn: () => T): T => {
    if (writer.stopped) return fn();
    const given = typeof command === 'string' ? { name: command } : command;
    const ctx = commandStarted(record.settings, nextToken(), { name: given.name, parent: given.parent });
    if (given.cpu) startCpu(ctx, 'asked');
    return runCommand(ctx, fn);
  };
  return assemble(options, {
    record,
    commands: { settings: record.settings, nextToken },
    bullmq: () => {
      // The app has BullMQ loaded by now: its Worker is followed for its processors' errors.
      instrumentLoaded(tellOwn);
      return (telemetry ??= bullmqTelemetry(record.settings, nextToken));
    },
    run,
    pages,
    stopped: () => writer.stopped,
    store: storage.read,
    flush: () => {
      record.finishEnded(true);
      return writer.flush();
    },
    close: () => {
      unanswer();
      record.finishEnded(true);
      writer.close();
      storage.close();
    },
  });
}

function noteFailure(failures: Failure[], ctx: WorkContext, status: number): void {
  if (failures.length >= KEPT_FAILURES) failures.shift();
  failures.push({ token: ctx.token, time: ctx.time, status });
}

function drewShared(token: string, writer: ProfileWriter, length: number): boolean {
  const slot = Atomics.load(writer.slot, 0);
  if (slot < 0) return token.length === longLength(length);
  const prefix = slotPrefix(slot);
  return token.startsWith(prefix) && writer.taken.has(token.slice(prefix.length));
}

/** Whether the path of `url` is one the app asked not to record: a string takes itself and what lies under it. */
function excluded(url: string, paths: (string | RegExp)[]): boolean {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  return paths.some((p) => {
    if (typeof p === 'string') return path === p || path.startsWith(p.endsWith('/') ? p : `${p}/`);
    // A global RegExp keeps where it last matched: each path is tested from its start.
    p.lastIndex = 0;
    return p.test(path);
  });
}

/** A profiler given no key (and no authorize) makes one: see checkAccess for why loopback is not enough. */
function withKey(options: ResolvedOptions, database: string): ResolvedOptions {
  if (options.secret !== undefined || options.authorize) return options;
  const { key, file } = madeAccessKey(database, options.onError);
  return { ...options, secret: key, keyMade: true, keyFile: file };
}

interface Recording {
  record: RequestHandler;
  bullmq(): BullmqTelemetry;
  commands: WebProfiler[typeof kCommands];
  run: WebProfiler['run'];
  /** The writer cannot run: requests pass through unrecorded. */
  stopped(): boolean;
  pages: ReturnType<typeof profilerPages>;
  store(): ProfileReader | undefined;
  flush(): number;
  close(): void;
}

function assemble(options: ResolvedOptions, recording?: Recording): WebProfiler {
  const record = recording?.record;
  const pages = recording?.pages;

  let pinoHttp: boolean | undefined;
  const excludedPaths = options.exclude.paths;
  let lastApp: unknown;
  let keyToTell = recording && announcesKey(options);
  const middleware = function webProfilerMiddleware(req: Request, res: Response, next: NextFunction) {
    if (keyToTell) {
      keyToTell = false;
      process.stderr.write(`[web-profiler] Profiler: ${keyLink(req, options.secret!)}\n  (this link carries its key${options.keyFile ? `, kept in ${options.keyFile}` : ''}: open it once, a cookie keeps it)\n`);
    }
    // The first recorder to see a request owns it: mounted again in a sub-app, or a second profiler, adds nothing.
    if (contextOf(res) !== undefined) return next();
    if (record && pages && !recording.stopped()) {
      if (isProfilerPath(req.url)) {
        // As the router gives it to a layer: in front of the router (see runInFront) it has not yet.
        req.baseUrl ??= '';
        return pages(req, res);
      }
      if (excludedPaths.length === 0 || !excluded(req.url, excludedPaths)) {
        const cpu = cpuAsked(req.headers);
        if (cpu !== undefined) return askedForCpu(req, res, next, cpu);
        record(req, res, next);
        // After the first request's recording: the recorder has hooked the app's layers by then.
        if (req.app !== lastApp) {
          lastApp = req.app;
          runInFront(req.app, middleware);
        }
        return;
      }
    }
    // App code calls req.log whether or not the profiler records: it must exist and cost nothing
    // (unless pino-http gives it, which it does only where req.log is not set yet).
    if (!(pinoHttp ??= pinoHttpLoaded())) req.log = logger;
    if (options.debug) res.setHeader('X-Robots-Tag', 'noindex');
    next();
  } as WebProfiler;

  /** Only a client the profiler's access check lets in may have its request CPU-profiled; anyone else's ask is ignored. */
  function askedForCpu(req: Request, res: Response, next: NextFunction, how: 'header' | 'cookie') {
    const go = (allowed: boolean) => {
      if (allowed) (req as { [kProfileCpu]?: string })[kProfileCpu] = how;
      record!(req, res, next);
    };
    const verdict = checkAccess(req, options);
    if ('then' in verdict) verdict.then((v) => go(v.ok), () => go(false));
    else go(verdict.ok);
  }

  const handleErrors = errorHandler(options);
  return Object.assign(middleware, {
    notFound: notFound(options.debug ? handleErrors : undefined, options.methodNotAllowed),
    errorHandler: handleErrors,
    options,
    store: () => recording?.store(),
    flush: () => recording?.flush() ?? 0,
    close: () => recording?.close(),
    run: recording?.run ?? (<T>(_: unknown, fn: () => T) => fn()),
    bullmq: () => recording?.bullmq(),
    spanProcessor: () => (recording ? spanProcessor() : { onStart() {}, onEnd() {}, forceFlush: () => Promise.resolve(), shutdown: () => Promise.resolve() }),
    [kCommands]: recording?.commands,
    mailTransport,
    link(origin: string) {
      if (!recording) return undefined;
      keyToTell = false;
      return linkWithKey(origin, options.keyMade ? options.secret : undefined);
    },
  });
}
