import { barsSvg, histogramLabel, insightsCache, parsePeriod, regressionsOf } from './insights.js';
import { insightsOf } from '../storage/insights.js';
import type { Request, Response } from 'express';
import { panelOptionsOf, readProfile as derived, type PanelInfo } from '../collectors/index.js';
import { onceEach } from '../recording/collect.js';
import { routeTable } from './routes.js';
import type { ResolvedOptions } from '../options.js';
import { isToken } from '../recording/token.js';
import { StorageUnavailable, type ProfileReader } from '../storage/reader.js';
import { checkAccess, exchangeQuerySecret, isLoopbackHost, SECRET_QUERY, type Verdict } from './access.js';
import { COMMAND_KINDS, METHODS, parseSearch } from './search-params.js';
import type { SearchFilter } from '../storage/store.js';
import { LOADER_PATH, loader, renderToolbar } from './toolbar.js';
import { sendPage, serverTiming } from './views.js';
import { performance } from 'node:perf_hooks';
import type { ExplainRegistry } from './explain.js';
import type { DbData } from '../collectors/db.js';
import { asCurl, asFetch } from './replay.js';
import { RUNNERS, testOf, type Runner } from './replay-test.js';
import { emlOf } from './eml.js';
import type { MailData } from '../collectors/mail.js';
import { compareProfiles, differencesOf } from './compare.js';
import { callReplayOf, failureOf, menuOf, parentLinkOf, replayOf, toolbarSummary } from './profile-view.js';
import { originOf } from '../recording/url.js';
import { driverReport } from '../instruments/index.js';
import { DRIVER_PANELS, type DriverPanel } from '../instruments/driver.js';

const isDriverPanel = (id: string): id is DriverPanel => (DRIVER_PANELS as readonly string[]).includes(id);

export interface PagesDeps {
  options: ResolvedOptions;
  /** When this profiler started (epoch ms): the insights' default period begins there. */
  started: number;
  /** Every panel in menu order: the core ones, then the app's. */
  panels: PanelInfo[];
  /** The SELECTs of recent requests, by reference, for EXPLAIN. */
  explainable: ExplainRegistry;
  /** The store as it is: what this process recorded may still be on its way to it (see settle). */
  store(): ProfileReader | undefined;
  /** Write what this process recorded and has not stored yet, now; resolves once it is stored. */
  settle(): Promise<unknown>;
  /** Whether this process has recorded anything it has not stored yet. */
  behind(): boolean;
  /** Whether `token` may be one this process drew (and so may still be on its way). */
  drew(token: string): boolean;
  /** Resolves once the request that drew `token` here has finished, or after `ceiling` ms. */
  finished(token: string, ceiling: number): Promise<void>;
}

const RECENT = 8;
const RECENT_MS = 10_000;
/** How long a page waits for a request still running when its profile is asked for. */
const RUNNING_WAIT_MS = 3_000;

/** Live lists open at once, per profiler: each polls the store. */
const MAX_STREAMS = 16;
const POLL_MS = 250;

/** Panels that have a view of their own; any other (a user's collector) is shown as data. */
const VIEWS = new Set(['command', 'request', 'response', 'security', 'graphql', 'exception', 'logs', 'dumps', 'translations', 'performance', 'db', 'http_client', 'cache', 'views', 'mail', 'jobs', 'ai', 'cpu', 'routing', 'config']);

const wantsJson = (req: Request) => {
  const accept = req.headers.accept ?? '';
  return /json/i.test(accept) && req.accepts(['html', 'json']) === 'json';
};

/**
 * The profiler's pages: /_profiler (301), /_profiler/ (latest), /_profiler/search, /_profiler/latest,
 * /_profiler/<token>?panel=, and /_wdt/<token>. Each HTML page has a JSON twin (Accept: application/json).
 */
export function profilerPages(deps: PagesDeps) {
  const { options } = deps;
  const panelOptions = panelOptionsOf(options);
  /** Profiles read in the last RECENT_MS, by token (the newest RECENT). */
  const recent = new Map<string, { at: number; profile: ReturnType<typeof readStored> }>();
  // A panel that fails to derive fails on every read of its profile alike: told once.
  const tellPanel = onceEach(options.onError);
  let streams = 0;
  const cachedInsights = insightsCache();

  function fail(req: Request, res: Response, status: number, title: string, message: string, extra: Record<string, unknown> = {}) {
    if (wantsJson(req)) {
      res.status(status).json({ status, title, detail: message, ...extra });
      return;
    }
    sendPage(res, status, 'profiler/message', { title, message, ...extra });
  }

  /** The page's own query, kept through the key form (which sends only its fields). */
  const keptQuery = (req: Request) => [...new URL(req.originalUrl, 'http://x').searchParams].filter(([name]) => name !== SECRET_QUERY);

  /**
   * A profile from the moment its response has finished: one this process recorded and has not
   * stored yet is written now (not with the next batch), then read. The request's thread never
   * waits for this; only the page does.
   */
  function readProfile(store: ProfileReader, token: string): ReturnType<typeof readStored> {
    // A page and what it loads at once (a mail panel's previews, its downloads) read a profile once:
    // stored profiles do not change, and reading a large one again for each frame held the app's thread.
    const now = performance.now();
    for (const [kept, { at }] of recent) if (now - at > RECENT_MS) recent.delete(kept);
    const hit = recent.get(token);
    if (hit !== undefined) return hit.profile;
    const profile = readStored(store, token);
    recent.set(token, { at: now, profile });
    if (recent.size > RECENT) recent.delete(recent.keys().next().value!);
    profile.then((found) => found || recent.delete(token), () => recent.delete(token));
    return profile;
  }

  async function readStored(store: ProfileReader, token: string) {
    const profile = await derived(store, token, panelOptions, tellPanel);
    if (profile || !deps.drew(token)) return profile;
    await deps.settle();
    const answered = await derived(store, token, panelOptions, tellPanel);
    if (answered) return answered;
    // Its head went out before its end: the profile is made when the request finishes.
    await deps.finished(token, RUNNING_WAIT_MS);
    await deps.settle();
    return derived(store, token, panelOptions, tellPanel);
  }

  /** Lists and search show every request that has finished, as readProfile does one. */
  async function settled(): Promise<void> {
    if (deps.behind()) await deps.settle();
  }

  function withStore(req: Request, res: Response): ProfileReader | undefined {
    const store = deps.store();
    if (!store) unavailable(req, res);
    return store;
  }

  function unavailable(req: Request, res: Response, why = 'Its log says why.') {
    res.setHeader('Retry-After', '2');
    fail(req, res, 503, 'Storage unavailable', `The profiler cannot read its storage right now; the application keeps serving. ${why}`);
  }

  async function list(req: Request, res: Response, mode: 'list' | 'search') {
    const parsed = parseSearch(req);
    if (!parsed.ok) return fail(req, res, 400, 'Invalid search', parsed.error, { nav: mode });
    const store = withStore(req, res);
    if (!store) return;
    const { filter, form } = parsed;
    await settled();
    // The live list goes on from the last row before this page's read, not from when its stream
    // opens: a profile stored in between would be on neither (the page drops a token it shows twice).
    const live = !filter.before && filter.sort !== 'duration' && !wantsJson(req);
    const after = live ? await store.lastId() : undefined;
    // One more than asked tells whether an older page exists.
    const rows = await store.find({ ...filter, limit: filter.limit + 1 });
    const more = rows.length > filter.limit;
    if (more) rows.pop();
    // Slowest first has no "older" page: `before` pages by arrival.
    const older = more && filter.sort !== 'duration' ? `?${new URLSearchParams({ ...form, before: rows[rows.length - 1].token })}` : undefined;
    if (wantsJson(req)) {
      res.json({ profiles: rows, filter: form, next: older ? `${req.baseUrl}${req.path}${older}` : null });
      return;
    }
    // Which instance served each request: always on a shared store, else once a file holds several.
    const instances = store.shared || rows.some((r) => r.instance !== rows[0].instance) || Boolean(form.instance);
    sendPage(res, 200, 'profiler/list', { methods: form.type === 'command' ? COMMAND_KINDS : form.type === 'request' ? METHODS : [...METHODS, ...COMMAND_KINDS], title: mode === 'list' ? 'Latest profiles' : 'Search', nav: mode, rows, form, older, mode, paged: Boolean(filter.before), instances, after });
  }

  async function profilePage(req: Request, res: Response, token: string) {
    const store = withStore(req, res);
    if (!store) return;
    const profile = await readProfile(store, token);
    if (!profile) {
      res.setHeader('Retry-After', '1');
      return fail(req, res, 404, 'Profile not found', `No profile is stored for token "${token}": its request is still running (a profile is written when the response ends), or it was pruned, dropped while storage was behind, or recorded by another server that has not written it yet.`, { token });
    }
    const panels = menuOf(profile, deps.panels);
    const asked = req.query.panel;
    // Opens on why it failed: its exception, else a GraphQL request's errors.
    const graphqlErrors = ((profile.collectors.graphql as { errors?: number } | undefined)?.errors ?? 0) > 0;
    const panelId = typeof asked === 'string' && asked !== '' ? asked : profile.collectors.exception ? 'exception' : graphqlErrors ? 'graphql' : profile.type === 'command' ? 'command' : 'request';
    const panel = panels.find((p) => p.id === panelId);
    if (!panel) {
      return fail(req, res, 404, 'Unknown panel', `There is no panel "${String(asked)}". Available panels: ${panels.map((p) => p.id).join(', ')}.`, { panels: panels.map((p) => p.id), token });
    }
    if (wantsJson(req)) {
      res.json(req.query.panel ? { token, panel: panelId, data: profile.collectors[panelId] ?? null } : profile);
      return;
    }
    const data = profile.collectors[panelId];
    const routes = panelId === 'routing' && data ? routeTable(req.app, (data as { path: string }).path) : undefined;
    // ?explain=N opens query N's plan inside the db panel.
    const asking = panelId === 'db' && typeof req.query.explain === 'string' && /^\d{1,4}$/.test(req.query.explain) ? Number(req.query.explain) : undefined;
    const explained = asking === undefined ? undefined : { n: asking, ...(await deps.explainable.explain(token, asking, (data as DbData | undefined)?.queries.find((q) => q.n === asking))) };
    const replay = panelId === 'request' ? replayOf(profile) : undefined;
    // Recent requests with the same method and page (any query string), to set beside this one:
    // among the newest 10,000 (the default retention), so that SQLite, which has no URL index, reads few.
    const page = profile.url.replace(/[?#].*$/, '');
    const compareWith = (await store.find({ method: profile.method, page, newest: 10_000, limit: 11 })).filter((p) => p.token !== token).slice(0, 10);
    // What this profile started: the jobs it queued, the runs and loopback calls it made.
    const children = await store.find({ parent: token, limit: 50 });
    // The requests that waited behind this one's synchronous code and arrived while it ran (those in flight are in its record).
    const delayed = (profile.collectors.performance as { loop?: { blocks?: unknown[] } } | undefined)?.loop?.blocks ? await store.find({ blockedBy: token, limit: 50 }) : undefined;
    sendPage(res, 200, 'profiler/profile', {
      explained,
      compareWith,
      children,
      delayed,
      traceUrl: profile.trace && options.traceUrl ? options.traceUrl.replace(/%s/g, profile.trace) : undefined,
      // The commands themselves are made when asked for (the copy buttons fetch them).
      replay: replay !== undefined,
      parentLink: parentLinkOf(profile, (host) => isLoopbackHost(host) || options.allowedHosts.includes(host) || options.linkHosts.includes(host) || host === new URL(originOf(req)).hostname.toLowerCase()),
      title: `${profile.type === 'command' ? profile.url : `${profile.method} ${profile.url}`} · ${token}`,
      profile,
      panels,
      panel,
      data,
      view: VIEWS.has(panelId) ? panelId : 'generic',
      error: profile.collectorErrors?.[panelId],
      routes,
      // A failure that threw nothing: what explains it, on the page a link opens and on the request panel.
      failure: panelId === 'request' ? failureOf(profile) : undefined,
      editorLink: options.editorLink,
      // An empty panel of a library's kind says what this process follows and what it cannot; the configuration lists all.
      coverage: data === undefined && isDriverPanel(panelId) ? driverReport(panelId) : undefined,
      drivers: panelId === 'config' ? Object.fromEntries(DRIVER_PANELS.map((p) => [p, driverReport(p)])) : undefined,
    });
  }

  return function profilerRoutes(req: Request, res: Response) {
    res.setHeader('X-Robots-Tag', 'noindex');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    const started = performance.now();
    // Every profiler answer says how long the server took, for devtools and for the bench.
    const writeHead = res.writeHead;
    res.writeHead = function (this: Response, ...args: unknown[]) {
      serverTiming(this, 'profiler', started);
      return (writeHead as (...a: unknown[]) => Response).apply(this, args);
    } as typeof res.writeHead;
    // The toolbar's loader, for pages whose policy runs only scripts of their origin: the same code every page carries inline, so no access check.
    if (req.path === LOADER_PATH && (req.method === 'GET' || req.method === 'HEAD')) {
      res.setHeader('Content-Type', 'text/javascript; charset=utf-8');
      res.setHeader('Cache-Control', 'no-cache');
      return void res.end(loader);
    }
    if (!isolated(req)) {
      res.statusCode = 403;
      res.setHeader('Content-Type', 'text/plain; charset=utf-8');
      res.setHeader('Cache-Control', 'no-store');
      return void res.end('The profiler answers another site only when a link is followed to it, not a script, a style, an image or a fetch of its page.\n');
    }
    const verdict = checkAccess(req, options);
    const failed = (err: unknown) => {
      try {
        if (res.headersSent) res.destroy();
        else if (err instanceof StorageUnavailable) unavailable(req, res, (err as Error).message);
        else fail(req, res, 500, 'Profiler error', String(err));
      } catch (pageError) {
        // No page can be made (its template engine does not load, as under jest 26): the reason as text.
        if (res.headersSent) res.destroy();
        else {
          res.statusCode = 500;
          res.setHeader('Content-Type', 'text/plain; charset=utf-8');
          res.end(`Profiler error: ${String(err)}\n(no page could be made: ${String(pageError)})\n`);
        }
      }
    };
    if ('then' in verdict) {
      verdict.then((v) => route(req, res, v), failed).then(undefined, failed);
      return;
    }
    try {
      route(req, res, verdict)?.then(undefined, failed);
    } catch (err) {
      failed(err);
    }
  };

  function route(req: Request, res: Response, verdict: Verdict): Promise<void> | void {
    if (!verdict.ok) return fail(req, res, 403, 'Access denied', verdict.reason, verdict.askKey && !wantsJson(req) ? { askKey: true, keep: keptQuery(req) } : {});
    if (exchangeQuerySecret(req, res, options)) return;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      return fail(req, res, 405, 'Method not allowed', 'The profiler only reads: GET and HEAD.');
    }
    const path = req.path;
    if (path === '/_profiler') {
      const q = req.originalUrl.indexOf('?');
      return res.redirect(301, `/_profiler/${q < 0 ? '' : req.originalUrl.slice(q)}`);
    }
    if (path === '/_profiler/') return list(req, res, 'list');
    if (path === '/_profiler/search') {
      const token = typeof req.query.token === 'string' ? req.query.token.trim().toLowerCase() : '';
      if (token) {
        if (!isToken(token)) return fail(req, res, 404, 'Profile not found', `"${token}" is not a token: tokens are 6 to 32 lowercase hex characters.`);
        return res.redirect(302, `/_profiler/${token}`);
      }
      return list(req, res, 'search');
    }
    if (path === '/_profiler/stream') return stream(req, res);
    if (path === '/_profiler/insights') return insightsPage(req, res);
    if (path === '/_profiler/latest') {
      const type = typeof req.query.type === 'string' && /^[a-z]{1,20}$/.test(req.query.type) ? req.query.type : 'request';
      return latest(req, res, type);
    }
    const wdt = /^\/_wdt\/([^/]*)$/.exec(path);
    if (wdt) return toolbar(req, res, wdt[1]);
    const compare = /^\/_profiler\/([0-9a-f]{6,32})\/compare\/([^/]*)$/.exec(path);
    if (compare) return comparePage(req, res, compare[1], safeDecode(compare[2]));
    const cpu = /^\/_profiler\/([0-9a-f]{6,32})\/cpu\.cpuprofile$/.exec(path);
    if (cpu) return cpuDownload(req, res, cpu[1]);
    const replay = /^\/_profiler\/([0-9a-f]{6,32})\/(curl|fetch)$/.exec(path);
    if (replay) return replayPage(req, res, replay[1], replay[2] as 'curl' | 'fetch');
    const test = /^\/_profiler\/([0-9a-f]{6,32})\/test$/.exec(path);
    if (test) return testPage(req, res, test[1]);
    const mail = /^\/_profiler\/([0-9a-f]{6,32})\/mail\/(\d{1,4})(\.eml)?$/.exec(path);
    if (mail) return mailPage(req, res, mail[1], Number(mail[2]), mail[3] !== undefined);
    const explain = /^\/_profiler\/([0-9a-f]{6,32})\/db\/(\d{1,4})\/explain$/.exec(path);
    if (explain) return explainPage(req, res, explain[1], Number(explain[2]));
    const match = /^\/_profiler\/([^/]+)\/?$/.exec(path);
    if (match && isToken(match[1])) return profilePage(req, res, match[1]);
    const shown = match ? safeDecode(match[1]) : path;
    return fail(req, res, 404, 'Profile not found', match
      ? `"${shown}" is not a token: tokens are 6 to 32 lowercase hex characters.`
      : `The profiler has no page at ${shown}.`);
  }

  /** What costs the most over a period, from the sums the writer keeps by the minute and the hour (see storage/insights.ts). */
  async function insightsPage(req: Request, res: Response) {
    const parsed = parsePeriod(req.query as Record<string, unknown>, Date.now(), deps.started);
    if (!parsed.ok) return fail(req, res, 400, 'Invalid period', parsed.error, { nav: 'insights' });
    const store = withStore(req, res);
    if (!store) return;
    // The insights' sums wait up to a second on the writer's side (see WaitingSums): written now, as what is behind is.
    await deps.settle();
    const key = JSON.stringify(parsed.form);
    const insights = await cachedInsights(`i${key}`, () => insightsOf(store, parsed.period));
    const regressions = parsed.compare === undefined ? undefined : await cachedInsights(`r${key}`, () => regressionsOf(store, parsed.period, parsed.compare!));
    if (wantsJson(req)) return void res.json({ ...insights, regressions, form: parsed.form, recording: options.insights });
    sendPage(res, 200, 'profiler/insights', { title: 'Insights', nav: 'insights', insights, regressions, form: parsed.form, name: parsed.name, compare: parsed.compare, recording: options.insights, barsSvg, histogramLabel });
  }

  async function latest(req: Request, res: Response, type: string) {
    const store = withStore(req, res);
    if (!store) return;
    await settled();
    const token = await store.latest(type);
    if (!token) return fail(req, res, 404, 'No profiles', 'Nothing has been recorded yet: make a request to the application, then come back.');
    const keep = new URLSearchParams();
    if (typeof req.query.panel === 'string') keep.set('panel', req.query.panel);
    keep.set('type', type);
    res.redirect(302, `/_profiler/${token}?${keep}`);
  }

  /**
   * The live list: each profile stored after row `after` (the last one when the list page read its
   * rows), after Last-Event-ID on a reconnect, or else after the stream opened, as a Server-Sent
   * Event, read from the store every POLL_MS, so that profiles another process writes to the same
   * file come too. The search filters apply.
   */
  async function stream(req: Request, res: Response) {
    const parsed = parseSearch(req);
    if (!parsed.ok) return fail(req, res, 400, 'Invalid search', parsed.error);
    if (streams >= MAX_STREAMS) {
      res.setHeader('Retry-After', '10');
      return fail(req, res, 503, 'Too many live lists', `At most ${MAX_STREAMS} live lists can be open at once: close one, or reload later.`);
    }
    // Counted, and its end heard, before the first await: a client may leave during it (or during
    // an async authorize, before this ran), and concurrent ones must meet the cap.
    streams++;
    let open = true;
    let timer: NodeJS.Timeout | undefined;
    const stop = () => {
      if (!open) return;
      open = false;
      clearTimeout(timer);
      streams--;
    };
    res.once('close', stop);
    if (res.destroyed || req.socket.destroyed) return stop();
    try {
      await follow(req, res, parsed.filter, () => open, (next) => { timer = next; });
    } finally {
      if (res.writableEnded || !res.headersSent) stop();
    }
  }

  /** Polls the store for the stream while `open()`; `schedule` is given each pending poll's timer. */
  async function follow(req: Request, res: Response, search: SearchFilter, open: () => boolean, schedule: (timer: NodeJS.Timeout) => void) {
    const store = withStore(req, res);
    if (!store) return;
    const filter = { ...search, before: undefined, sort: undefined, limit: 200 };
    const from = (value: unknown) => (typeof value === 'string' && /^\d{1,15}$/.test(value) ? Number(value) : undefined);
    let last = from(req.headers['last-event-id']) ?? from(req.query.after) ?? (await store.lastId());
    if (!open()) return;
    const head = { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-store', 'X-Accel-Buffering': 'no' };
    if (req.method === 'HEAD') return void res.writeHead(200, head).end();
    res.writeHead(200, head);
    res.write('retry: 2000\n\n');
    let quiet = 0;
    // Each poll starts once the last has answered: a slow database is never asked twice at once.
    const tick = async () => {
      try {
        const rows = (await deps.store()?.since(last, filter)) ?? [];
        if (!open()) return;
        for (const { id, ...summary } of rows) {
          res.write(`id: ${id}\nevent: profile\ndata: ${JSON.stringify(summary)}\n\n`);
          last = id;
        }
        // A comment now and then keeps proxies from closing a quiet stream.
        if (rows.length > 0) quiet = 0;
        else if (++quiet * POLL_MS >= 15_000) {
          quiet = 0;
          res.write(': still here\n\n');
        }
      } catch (err) {
        // The browser reconnects after `retry`, from the last id it saw.
        res.end(`event: error\ndata: ${JSON.stringify(String((err as Error)?.message ?? err))}\n\n`);
        return;
      }
      if (open()) schedule(setTimeout(tick, POLL_MS).unref());
    };
    schedule(setTimeout(tick, POLL_MS).unref());
  }

  /** The raw V8 profile, as Chrome DevTools and speedscope open it. */
  async function cpuDownload(req: Request, res: Response, token: string) {
    const store = withStore(req, res);
    if (!store) return;
    const raw = (await readProfile(store, token))?.collectors.cpuprofile;
    if (raw === undefined) return fail(req, res, 404, 'No CPU profile', `Profile "${token}" has no CPU profile: ask for one with the header X-Debug-Profile: cpu, or the toolbar's "Profile the next page load".`);
    res.setHeader('Content-Type', 'application/json');
    res.setHeader('Content-Disposition', `attachment; filename="${token}.cpuprofile"`);
    res.setHeader('Cache-Control', 'no-store');
    res.end(JSON.stringify(raw));
  }

  /**
   * Message n's HTML, for the mail panel's frame: sandboxed by its own policy (no script, no form,
   * no same origin) and loading nothing from the network; or, as .eml, the message to download.
   */
  async function mailPage(req: Request, res: Response, token: string, n: number, eml: boolean) {
    const store = withStore(req, res);
    if (!store) return;
    const profile = await readProfile(store, token);
    if (!profile) return fail(req, res, 404, 'Profile not found', `No profile is stored for token "${token}".`);
    const message = (profile.collectors.mail as MailData | undefined)?.messages.find((m) => m.n === n);
    if (!message) return fail(req, res, 404, 'No such message', `Profile "${token}" has no message ${n}.`);
    res.setHeader('Cache-Control', 'no-store');
    if (eml) {
      res.setHeader('Content-Type', 'message/rfc822');
      res.setHeader('Content-Disposition', `attachment; filename="${token}-${n}.eml"`);
      return void res.end(emlOf(message, token));
    }
    if (typeof message.html !== 'string') return fail(req, res, 404, 'No HTML', `Message ${n} of profile "${token}" has no HTML kept: its text is on the mail panel.`);
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.setHeader('Content-Security-Policy', "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; frame-ancestors 'self'; base-uri 'none'; form-action 'none'");
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.end(message.html);
  }

  /** Two profiles side by side; the JSON twin lists what differs. */
  async function comparePage(req: Request, res: Response, a: string, b: string) {
    if (!isToken(b)) return fail(req, res, 404, 'Profile not found', `"${b}" is not a token: tokens are 6 to 32 lowercase hex characters.`);
    const store = withStore(req, res);
    if (!store) return;
    const [left, right] = await Promise.all([readProfile(store, a), readProfile(store, b)]);
    const missing = !left ? a : !right ? b : undefined;
    if (missing !== undefined) return fail(req, res, 404, 'Profile not found', `No profile is stored for token "${missing}".`, { token: missing });
    const sections = compareProfiles(left!, right!);
    const differences = differencesOf(sections);
    if (wantsJson(req)) return void res.json({ left: a, right: b, differences });
    sendPage(res, 200, 'profiler/compare', { title: `Compare ${a} with ${b}`, a: left, b: right, sections, differences: differences.length });
  }

  /** The request (or, with ?call=N, its outgoing call N) as a command to send it again: text/plain. */
  async function replayPage(req: Request, res: Response, token: string, as: 'curl' | 'fetch') {
    const store = withStore(req, res);
    if (!store) return;
    const profile = await readProfile(store, token);
    if (!profile) return fail(req, res, 404, 'Profile not found', `No profile is stored for token "${token}".`);
    const call = typeof req.query.call === 'string' ? req.query.call : undefined;
    const target = call === undefined ? replayOf(profile) : /^\d{1,4}$/.test(call) ? callReplayOf(profile, Number(call)) : undefined;
    if (!target) return fail(req, res, 404, 'Nothing to replay', call === undefined ? 'This profile has no request to send again.' : `This profile has no outgoing call ${call}.`);
    res.setHeader('Content-Type', 'text/plain; charset=utf-8');
    res.setHeader('Cache-Control', 'no-store');
    // The request goes to this app, whatever Host it was sent with; an outgoing call, where the app sent it.
    const served = call === undefined ? originOf(req) : undefined;
    res.end(as === 'curl' ? asCurl(target, served) : asFetch(target, served));
  }

  /**
   * The request as a test file for ?runner=node (default), vitest or jest: it sends the request
   * again to BASE_URL (this app by default) and asserts the status and JSON body it got.
   */
  async function testPage(req: Request, res: Response, token: string) {
    const runner = (req.query.runner ?? 'node') as Runner;
    if (!RUNNERS.includes(runner)) return fail(req, res, 400, 'Unknown runner', `"${String(req.query.runner)}" is no runner this makes tests for: ${RUNNERS.join(', ')}.`);
    const store = withStore(req, res);
    if (!store) return;
    const profile = await readProfile(store, token);
    if (!profile) return fail(req, res, 404, 'Profile not found', `No profile is stored for token "${token}".`);
    const made = testOf(profile, runner, originOf(req));
    if (!made) return fail(req, res, 404, 'Nothing to replay', 'This profile has no request to send again.');
    // A download no page can run: a page of another origin that loaded it as a script would read the recorded request.
    res.setHeader('Content-Type', 'text/plain; charset=utf-8');
    res.setHeader('Content-Disposition', `attachment; filename="${made.file}"`);
    res.setHeader('Cache-Control', 'no-store');
    res.end(made.text);
  }

  /** A query's plan, by reference: the SQL and the connection are the app's own, never anything the browser sends. */
  async function explainPage(req: Request, res: Response, token: string, n: number) {
    const store = withStore(req, res);
    if (!store) return;
    const stored = ((await readProfile(store, token))?.collectors.db as DbData | undefined)?.queries.find((q) => q.n === n);
    const result = await deps.explainable.explain(token, n, stored);
    if (!result.ok) return fail(req, res, 404, 'Cannot explain', result.reason, { token, query: n });
    if (wantsJson(req)) return void res.json({ token, query: n, driver: result.driver, plan: result.plan });
    sendPage(res, 200, 'profiler/explain', { title: `Query plan · ${token} #${n}`, token, n, plan: result.plan, driver: result.driver, sql: result.sql });
  }

  async function toolbar(req: Request, res: Response, token: string) {
    if (!isToken(token)) return fail(req, res, 404, 'Profile not found', 'Not a token.');
    const store = withStore(req, res);
    if (!store) return;
    const profile = await readProfile(store, token);
    if (!profile) return fail(req, res, 404, 'Profile not found', `No profile is stored for token "${token}".`);
    const summary = toolbarSummary(profile);
    if (wantsJson(req)) return void res.json(summary);
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.setHeader('Cache-Control', 'no-store');
    // A fragment for the loader to insert: opened on its own, it may run nothing and be framed by no one.
    res.setHeader('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'");
    res.end(renderToolbar(summary));
  }
}

/**
 * A resource isolation policy on fetch metadata: what another origin's page makes the browser ask
 * for (a script, a style, an image, a fetch, a frame) gets nothing, so no page can read a profile
 * with the developer's cookie; a link followed to a profile from anywhere (a top-level
 * navigation) still opens it. Another port of the same host is same-site, not same-origin, and is
 * refused alike. Clients that send no metadata (curl, agents, old browsers) are not browsers'
 * pages and pass to the access check.
 */
function isolated(req: Request): boolean {
  const site = req.headers['sec-fetch-site'];
  if (site === undefined || site === 'same-origin' || site === 'none') return true;
  return req.headers['sec-fetch-mode'] === 'navigate' && req.headers['sec-fetch-dest'] === 'document' && (req.method === 'GET' || req.method === 'HEAD');
}

const safeDecode = (s: string) => {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
};
