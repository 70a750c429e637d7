import type { Eta } from 'eta';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { STATUS_CODES, type ServerResponse } from 'node:http';
import path from 'node:path';
import { FAILED } from '../redaction/record.js';
import { performance } from 'node:perf_hooks';
import { escape, jsonNode, valueTree } from './value-tree.js';
import type { ValueNode } from '../recording/snapshot-value.js';

/** views/ sits beside src/ and dist/ at the package root. */
export const VIEWS = path.resolve(__dirname, '../../views');

/**
 * Loaded on the first page, not with the middleware: eta requires `node:fs`, which jest before
 * 27 cannot load, and an app's tests under such a jest should still be recorded (its pages then
 * fail, and the error pages fall back to plain text).
 */
let eta: Eta | undefined;
const engine = (): Eta => {
  if (eta === undefined) {
    const { Eta: Engine } = createRequire(__filename)('eta') as typeof import('eta');
    eta = new Engine({ views: VIEWS, cache: true, autoEscape: true, autoTrim: false });
  }
  return eta;
};

const asset = (name: string) => readFileSync(path.join(VIEWS, 'assets', name), 'utf8');
const assets = { css: asset('style.css'), js: asset('app.js') };


/** The summary's `failed` bits in words (the live list's app.js says the same). */
const FAILED_REASONS: [number, string][] = [[FAILED.exception, 'an exception'], [FAILED.errorLog, 'an error logged'], [FAILED.graphql, 'GraphQL errors']];

export const helpers = {
  ms: (value: number | undefined) => (value === undefined || value < 0 ? '–' : value >= 100 ? `${Math.round(value)} ms` : value >= 1 ? `${value.toFixed(1)} ms` : `${value.toFixed(2)} ms`),
  bytes(value: number | undefined) {
    if (value === undefined) return '–';
    if (value < 1024) return `${value} B`;
    if (value < 1024 * 1024) return `${(value / 1024).toFixed(1)} KiB`;
    return `${(value / 1024 / 1024).toFixed(1)} MiB`;
  },
  time: (epoch: number) => new Date(epoch).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC'),
  ago(epoch: number, now = Date.now()) {
    const s = Math.round((now - epoch) / 1000);
    if (s < 60) return `${Math.max(s, 0)} s ago`;
    if (s < 3600) return `${Math.round(s / 60)} min ago`;
    if (s < 86400) return `${Math.round(s / 3600)} h ago`;
    return `${Math.round(s / 86400)} d ago`;
  },
  statusClass: (status: number) => (status >= 500 ? 's-server' : status >= 400 ? 's-client' : status >= 300 ? 's-redirect' : 's-ok'),
  statusText: (status: number) => STATUS_CODES[status] ?? '',
  /** Why a profile failed where its status does not say (the summary's `failed` bits, see redaction/record.ts), in words. */
  failedReasons: (failed: number | null | undefined) => FAILED_REASONS.filter(([bit]) => ((failed ?? 0) & bit) !== 0).map(([, why]) => why),
  /** What a profile's status badge says, and its colour: a command's exit code, a request's status. */
  outcome: (p: { type?: string; status: number }) => (p.type === 'command' ? { text: `exit ${p.status}`, cls: p.status === 0 ? 's-ok' : 's-server', title: p.status === 0 ? 'Ran to its end' : 'Failed' } : { text: String(p.status), cls: helpers.statusClass(p.status), title: STATUS_CODES[p.status] ?? '' }),
  json: (value: unknown) => (value === undefined ? '' : JSON.stringify(value, null, 2)),
  /** Paths under the working directory shown relative to it: shorter, and the same on every machine. */
  shortPath(file: string) {
    const cwd = process.cwd() + path.sep;
    return file.startsWith(cwd) ? file.slice(cwd.length) : file;
  },
  /** An editor URL for file:line, when a format is configured ('%f' file, '%l' line). */
  editorUrl(format: string | undefined, file: string, line: number) {
    if (!format || !path.isAbsolute(file)) return undefined;
    return format.replace(/%f/g, encodeURI(file)).replace(/%l/g, String(line));
  },
  entries: (value: unknown): [string, unknown][] => (value && typeof value === 'object' ? Object.entries(value) : []),
  /** A dumped value, or plain JSON (a log line's context), as a tree that unfolds: see value-tree.ts. */
  tree: (node: ValueNode, scope: string, open?: number) => valueTree(node, scope, open),
  jsonTree: (value: unknown, scope: string, open?: number) => valueTree(jsonNode(value), scope, open),
  /** Text made safe for HTML a template builds as a string (a link around a value). */
  escape: (value: unknown) => escape(String(value)),
  scalar: (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value, null, 2) ?? String(value)),
};

/** Render a template with the helpers, the inlined assets and a CSP nonce for its scripts. */
export function render(template: string, data: Record<string, unknown>, nonce = ''): string {
  return engine().render(template, { ...data, h: helpers, assets, nonce });
}

/** Server-Timing for pages the profiler renders itself: the bench reads it, and so can devtools. */
export function serverTiming(res: ServerResponse, name: string, started: number): void {
  if (!res.headersSent) res.setHeader('Server-Timing', `${name};dur=${(performance.now() - started).toFixed(3)}`);
}

/** Responses that are the profiler's own pages (the debug error pages among them): the toolbar stays out of them. */
export const ownPages = new WeakSet<ServerResponse>();

/**
 * Send a page with a Content-Security-Policy that lets only its own inline script run: whatever a
 * recorded request smuggled into a value is text, and would stay inert even if escaping failed.
 */
export function sendPage(res: ServerResponse, status: number, template: string, data: Record<string, unknown>, timing?: { name: string; started: number }): void {
  const nonce = randomBytes(16).toString('base64');
  ownPages.add(res);
  const html = render(template, data, nonce);
  if (timing) serverTiming(res, timing.name, timing.started);
  res.statusCode = status;
  res.setHeader('Content-Type', 'text/html; charset=utf-8');
  res.setHeader('Content-Security-Policy', `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'unsafe-inline'; img-src data:; connect-src 'self'; frame-src 'self'; form-action 'self'; frame-ancestors 'self'; base-uri 'none'`);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Cache-Control', 'no-store');
  res.end(html);
}
