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
 * HTML pages get it (no XHR, redirect, attachment, encoded or streamed body), as Symfony does.
 */
export function withToolbar(req: IncomingMessage, res: ServerResponse, token: string, chunk: unknown, encoding: unknown): Buffer | undefined {
  if (res.headersSent || res.statusCode >= 300 && res.statusCode < 400) return undefined;
  if (typeof chunk !== 'string' && !Buffer.isBuffer(chunk)) return undefined;
  if (!String(res.getHeader('content-type') ?? '').includes('html')) return undefined;
  // Most responses end here: the cheap tests first, the rarer headers only for a page with a </body>.
  if (typeof chunk === 'string' && !/<\/body>/i.test(chunk)) return undefined;
  const body = typeof chunk === 'string' ? Buffer.from(chunk, (encoding as BufferEncoding) || 'utf8') : chunk;
  const at = lastBodyClose(body);
  if (at < 0 || res.getHeader('content-encoding')) return undefined;
  if (/attachment/i.test(String(res.getHeader('content-disposition') ?? ''))) return undefined;
  if (req.headers['x-requested-with'] === 'XMLHttpRequest') return undefined;
  // A policy that forbids inline scripts would block the loader: leave such pages (ours included) alone.
  const csp = res.getHeader('content-security-policy');
  if (csp !== undefined && blocksInlineScripts(String(csp))) return undefined;
  const out = Buffer.concat([body.subarray(0, at), Buffer.from(snippet(token)), body.subarray(at)]);
  if (res.hasHeader('content-length')) res.setHeader('Content-Length', out.length);
  return out;
}

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
