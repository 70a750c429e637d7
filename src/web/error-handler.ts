import type { ErrorRequestHandler, Request, Response } from 'express';
import { STATUS_CODES } from 'node:http';
import { requestUrl } from '../recording/url.js';
import { logsData } from '../collectors/logs.js';
import type { ResolvedOptions } from '../options.js';
import type { RequestContext } from '../recording/context.js';
import { addLine } from '../recording/logger.js';
import { contextOf } from '../recording/context.js';
import { render, sendPage, serverTiming } from './views.js';
import { performance } from 'node:perf_hooks';
import { describeException, statusOf, type ExceptionData } from '../errors/describe.js';
import { redactException } from '../redaction/record.js';
import { HttpError } from '../errors/http-error.js';
import { checkAccess } from './access.js';

type Format = 'html' | 'json' | 'text';

/**
 * curl and fetch send Accept: *\/* and get text; browsers name text/html; API clients name JSON.
 * Express's req.accepts() would pick the first offer for *\/*, which is why this is spelled out.
 */
export function preferredFormat(req: Request): Format {
  const accept = req.headers.accept;
  if (!accept || /^\s*\*\/\*\s*(;[^,]*)?$/.test(accept)) return 'text';
  const best = req.accepts(['html', 'json', 'text']);
  return best === 'html' || best === 'json' ? best : 'text';
}

export function errorHandler(options: ResolvedOptions): ErrorRequestHandler {
  return function errorHandler(err, req, res, next) {
    const ctx = contextOf(res);
    if (ctx && ctx.error === undefined) ctx.error = err;
    // Too late for a page: Express's own handler closes the connection.
    if (res.headersSent) return next(err);
    const status = statusOf(err);
    const started = performance.now();
    const answer = (mayRead: boolean) => {
      try {
        if (!res.headersSent) respond(err, status, req, res, ctx, options, started, mayRead);
      } catch (renderError) {
        options.onError(`the error page failed to render: ${(renderError as Error).message}`);
        fallback(res, status);
      }
    };
    if (!options.debug) return answer(false);
    // The page's diagnostics (frames, code, paths, the log) are for those who may read the
    // profiler: the key, trustLocal's local client, authorize(). Anyone else gets a plain answer.
    let verdict: ReturnType<typeof checkAccess>;
    try {
      verdict = checkAccess(req, options);
    } catch {
      return answer(false);
    }
    if (verdict instanceof Promise) verdict.then((v) => answer(v.ok), () => answer(false));
    else answer(verdict.ok);
  };
}

function respond(err: unknown, status: number, req: Request, res: Response, ctx: RequestContext | undefined, options: ResolvedOptions, started: number, mayRead: boolean): void {
  const format = preferredFormat(req);
  res.statusCode = status;
  res.setHeader('Vary', 'Accept');
  if (err instanceof HttpError) for (const [name, value] of Object.entries(err.headers)) res.setHeader(name, value);
  if (!options.debug) return sendPlain(res, status, format);
  // Whether the answer carries diagnostics depends on who asks: no shared cache may keep it for another.
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Vary', 'Accept, Cookie, X-Profiler-Secret');

  const described = describeException(err, { excerpts: true });
  if (ctx && ctx.error === err) ctx.described = { error: err, data: described };
  if (status >= 500) process.stderr.write(`${described.chain[0].stack || `${described.chain[0].class}: ${described.chain[0].message}`}\n`);
  // What goes to the client, and into the profile, has its secrets redacted; stderr is the app's own.
  const exception = redactException(described, options.redactKeys);
  const first = exception.chain[0];
  if (ctx) addLine(ctx, status >= 500 ? 'error' : 'warn', `Uncaught ${first.class}: "${first.message}"`, undefined, 'app');
  // The profile has it all; the client, only what may be shown to it.
  if (!mayRead) return sendPlain(res, status, format, ctx?.token);
  res.setHeader('X-Debug-Exception', headerText(first.message));
  const where = first.frames.find((f) => f.kind === 'app') ?? first.frames[0];
  if (where) res.setHeader('X-Debug-Exception-File', `${headerText(where.file)}:${where.line}`);

  const token = ctx?.token;
  const profilerUrl = token && options.enabled ? `/_profiler/${token}?panel=exception&type=request` : undefined;
  const timing = { name: 'error-page', started };
  if (format === 'json') {
    res.setHeader('Content-Type', 'application/problem+json; charset=utf-8');
    serverTiming(res, timing.name, started);
    res.end(JSON.stringify({
      type: 'about:blank',
      title: STATUS_CODES[status] ?? 'Error',
      status,
      detail: first.message,
      class: first.class,
      trace: first.frames.map(({ excerpt: _excerpt, ...frame }) => frame),
      causes: exception.chain.slice(1).map((e) => ({ class: e.class, message: e.message })),
      ...(token ? { token, profile: profilerUrl } : {}),
    }, null, 2));
    return;
  }
  const logs = ctx ? logsData(ctx.logs, options.redactKeys, ctx.logsDropped) : undefined;
  if (format === 'text') {
    res.setHeader('Content-Type', 'text/plain; charset=utf-8');
    const report = textReport(exception, req, logs?.lines ?? [], token, profilerUrl);
    serverTiming(res, timing.name, started);
    res.end(report);
    return;
  }
  sendPage(res, status, 'errors/debug', {
    exception,
    logs,
    token,
    profilerUrl,
    method: req.method,
    url: safeUrl(req),
    editorLink: options.editorLink,
  }, timing);
}

/**
 * The status and its standard title, as negotiated: what production answers, and what a client
 * that may not read the profiler gets in debug mode, with the profile's token (which opens nothing
 * without access), for whoever may.
 */
function sendPlain(res: Response, status: number, format: Format, token?: string): void {
  const text = STATUS_CODES[status] ?? 'Error';
  if (format === 'json') {
    res.setHeader('Content-Type', 'application/problem+json; charset=utf-8');
    res.end(JSON.stringify({ type: 'about:blank', title: text, status, ...(token ? { token } : {}) }));
  } else if (format === 'text') {
    res.setHeader('Content-Type', 'text/plain; charset=utf-8');
    res.end(`${status} ${text}\n${token ? `Profile: ${token}\n` : ''}`);
  } else {
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.end(render('errors/production', { status, text, token }));
  }
}

function textReport(exception: ExceptionData, req: Request, lines: { time: number; level: string; message: string }[], token?: string, profilerUrl?: string): string {
  const out: string[] = [];
  exception.chain.forEach((e, i) => {
    out.push(`${i === 0 ? '' : '\nCaused by: '}${e.class}: ${e.message}${i === 0 ? ` (HTTP ${exception.status} ${STATUS_CODES[exception.status] ?? ''})` : ''}`);
    const excerptFrame = e.frames.find((f) => f.excerpt);
    for (const f of e.frames) {
      out.push(`    at ${f.fn} (${f.file}:${f.line}:${f.column})`);
      if (f === excerptFrame && f.excerpt) {
        f.excerpt.lines.forEach((line, k) => {
          const n = f.excerpt!.start + k;
          out.push(`${n === f.line ? '  > ' : '    '}${String(n).padStart(5)} | ${line}`);
        });
      }
    }
  });
  out.push('', `Request: ${req.method} ${safeUrl(req)}`);
  if (lines.length > 0) {
    out.push('', 'Log:');
    for (const l of lines) out.push(`  ${new Date(l.time).toISOString().slice(11, 23)} ${l.level.toUpperCase().padEnd(5)} ${l.message}`);
  }
  if (token) out.push('', `Profile: ${token} ${profilerUrl ?? ''}`.trimEnd());
  return `${out.join('\n')}\n`;
}

/** Text for a header: cut, made well-formed (a cut may split a surrogate pair, a message may hold a lone one), then escaped. */
const headerText = (text: string) => encodeURIComponent(text.slice(0, 2000).toWellFormed());

/** The page must render even for a request whose URL cannot be rebuilt. */
const safeUrl = (req: Request) => {
  try {
    return requestUrl(req);
  } catch {
    return req.originalUrl;
  }
};

/** The last resort: the status and its phrase, nothing that could fail. */
function fallback(res: Response, status: number): void {
  try {
    if (!res.headersSent) {
      res.statusCode = status;
      res.setHeader('Content-Type', 'text/plain; charset=utf-8');
    }
    res.end(`${status} ${STATUS_CODES[status] ?? 'Error'}\n`);
  } catch {
    res.destroy();
  }
}
