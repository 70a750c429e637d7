import type { IncomingMessage, ServerResponse } from 'node:http';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { render, VIEWS } from './views.js';

const loader = readFileSync(path.join(VIEWS, 'assets', 'toolbar.js'), 'utf8');

export function renderToolbar(summary: Record<string, unknown>): string {
  return render('toolbar', { s: summary });
}

/** The snippet placed before </body>: a placeholder and the loader, which fetches /_wdt/<token>. */
const snippet = (token: string) =>
  `<div id="wp-wdt" data-token="${token}" hidden></div><script>${loader}</script>`;

/**
 * The body with the toolbar before its last </body>, or undefined to leave it alone: only whole
 * HTML pages get it (no XHR, redirect, attachment, encoded, streamed or XHTML body), as Symfony
 * does. The body changes, so an ETag the app set for it goes; Content-Length follows the new body.
 */
export function withToolbar<T extends string | Buffer>(req: IncomingMessage, res: ServerResponse, token: string, body: T, encoding: unknown): T | undefined {
  if (res.headersSent || res.statusCode >= 300 && res.statusCode < 400) return undefined;
  if (!isHtml(res.getHeader('content-type'))) return undefined;
  // Most responses end here: the cheap tests first, the rarer headers only for a page with a </body>.
  const at = typeof body === 'string' ? lastBodyCloseIn(body) : lastBodyClose(body as Buffer);
  if (at < 0 || res.getHeader('content-encoding')) return undefined;
  if (/attachment/i.test(String(res.getHeader('content-disposition') ?? ''))) return undefined;
  if (req.headers['x-requested-with'] === 'XMLHttpRequest') return undefined;
  // A policy that forbids inline scripts would block the loader: leave such pages (ours included) alone.
  const csp = res.getHeader('content-security-policy');
  if (csp !== undefined && blocksInlineScripts(String(csp))) return undefined;
  res.removeHeader('ETag');
  if (typeof body === 'string') {
    const out = body.slice(0, at) + snippet(token) + body.slice(at);
    if (res.hasHeader('content-length')) res.setHeader('Content-Length', Buffer.byteLength(out, Buffer.isEncoding(encoding as string) ? (encoding as BufferEncoding) : 'utf8'));
    return out as T;
  }
  const bytes = body as Buffer;
  const out = Buffer.concat([bytes.subarray(0, at), Buffer.from(snippet(token)), bytes.subarray(at)]);
  if (res.hasHeader('content-length')) res.setHeader('Content-Length', out.length);
  return out as T;
}

/** text/html itself: XHTML (application/xhtml+xml) is XML, which an injected <script> may break. */
const isHtml = (type: unknown) => typeof type === 'string' && /^\s*text\/html\s*(;|$)/i.test(type);

/** The directive that governs <script> elements allows inline ones only with 'unsafe-inline' and no nonce or hash. */
export function blocksInlineScripts(csp: string): boolean {
  if (!csp) return false;
  const directives = new Map<string, string[]>();
  for (const part of csp.split(';')) {
    const [name, ...sources] = part.trim().split(/\s+/);
    if (name && !directives.has(name.toLowerCase())) directives.set(name.toLowerCase(), sources);
  }
  const sources = directives.get('script-src-elem') ?? directives.get('script-src') ?? directives.get('default-src');
  if (!sources) return false;
  return !sources.includes("'unsafe-inline'") || sources.some((s) => /^'(nonce|sha256|sha384|sha512)-/.test(s));
}

const BODY_CLOSE = [Buffer.from('</body>'), Buffer.from('</BODY>')];

function lastBodyClose(body: Buffer): number {
  return Math.max(body.lastIndexOf(BODY_CLOSE[0]), body.lastIndexOf(BODY_CLOSE[1]));
}

function lastBodyCloseIn(body: string): number {
  const at = body.lastIndexOf('</body>');
  return at >= 0 ? at : body.lastIndexOf('</BODY>');
}
