import type { IncomingMessage, ServerResponse } from 'node:http';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ownPages, render, VIEWS } from './views.js';

/** The toolbar's loader: inline in a page, or from LOADER_PATH where the page's policy allows only scripts of its origin. */
export const loader = readFileSync(path.join(VIEWS, 'assets', 'toolbar.js'), 'utf8');
export const LOADER_PATH = '/_wdt/loader.js';

export function renderToolbar(summary: Record<string, unknown>): string {
  return render('toolbar', { s: summary });
}

/** How the loader may run on a page, by its Content-Security-Policy. */
type Script = { inline: true; nonce?: string } | { inline: false };

/** The snippet placed before </body>: a placeholder and the loader, which fetches /_wdt/<token>. */
const snippet = (token: string, script: Script) =>
  `<div id="wp-wdt" data-token="${token}" hidden></div>${script.inline ? `<script${script.nonce ? ` nonce="${script.nonce}"` : ''}>${loader}</script>` : `<script src="${LOADER_PATH}"></script>`}`;

const NO_SCRIPT = "the web debug toolbar is left out of pages whose Content-Security-Policy lets no script of the page's origin run: give script-src a nonce (the toolbar uses the page's) or 'self'";

/**
 * The body with the toolbar before its last </body>, or undefined to leave it alone: only whole
 * HTML pages get it (no XHR, redirect, attachment, encoded, streamed or XHTML body), as Symfony
 * does. The body changes, so the validators and ranges the app offered for it go (ETag,
 * Last-Modified, Accept-Ranges); Content-Length follows the new body.
 */
export const toolbarInjector = (tell: (message: string) => void) =>
  function withToolbar<T extends string | Buffer>(req: IncomingMessage, res: ServerResponse, token: string, body: T, encoding: unknown): T | undefined {
  if (res.headersSent || res.statusCode >= 300 && res.statusCode < 400) return undefined;
  if (!isHtml(res.getHeader('content-type'))) return undefined;
  // Most responses end here: the cheap tests first, the rarer headers only for a page with a </body>.
  const at = typeof body === 'string' ? lastBodyCloseIn(body) : lastBodyClose(body as Buffer);
  if (at < 0 || res.getHeader('content-encoding')) return undefined;
  if (/attachment/i.test(String(res.getHeader('content-disposition') ?? ''))) return undefined;
  if (req.headers['x-requested-with'] === 'XMLHttpRequest') return undefined;
  if (ownPages.has(res)) return undefined;
  const policy = res.getHeader('content-security-policy');
  const script = scriptFor(policy);
  if (script === undefined) {
    // A page that runs no script at all (Express's own "Cannot GET /x": default-src 'none') is not one a toolbar was expected on.
    if (!runsNoScript(policy)) tell(NO_SCRIPT);
    return undefined;
  }
  // The page as sent is not the file a validator or a range would be answered for: none is offered for it.
  res.removeHeader('ETag');
  res.removeHeader('Last-Modified');
  res.removeHeader('Accept-Ranges');
  if (typeof body === 'string') {
    const out = body.slice(0, at) + snippet(token, script) + body.slice(at);
    if (res.hasHeader('content-length')) res.setHeader('Content-Length', Buffer.byteLength(out, Buffer.isEncoding(encoding as string) ? (encoding as BufferEncoding) : 'utf8'));
    return out as T;
  }
  const bytes = body as Buffer;
  const out = Buffer.concat([bytes.subarray(0, at), Buffer.from(snippet(token, script)), bytes.subarray(at)]);
  if (res.hasHeader('content-length')) res.setHeader('Content-Length', out.length);
  return out as T;
  };

/** text/html itself: XHTML (application/xhtml+xml) is XML, which an injected <script> may break. */
const isHtml = (type: unknown) => typeof type === 'string' && /^\s*text\/html\s*(;|$)/i.test(type);

/**
 * How the loader can run under the page's policies (each one given must allow it): inline where
 * none governs scripts or 'unsafe-inline' counts (no nonce or hash beside it), inline with the
 * page's own nonce where it has one, from this origin where 'self' is allowed (and not ignored for
 * 'strict-dynamic'); else not at all.
 */
export function scriptFor(header: unknown): Script | undefined {
  if (header === undefined) return { inline: true };
  const policies = (Array.isArray(header) ? header : [header]).flatMap((h) => String(h).split(','));
  let nonce: string | undefined;
  let inline = true;
  let self = true;
  for (const policy of policies) {
    const sources = scriptSources(policy);
    if (sources === undefined) continue;
    const given = sources.find((s) => /^'nonce-[A-Za-z0-9+/_=-]+'$/.test(s))?.slice(7, -1);
    const pinned = sources.some((s) => /^'(nonce|sha256|sha384|sha512)-/.test(s));
    if (!sources.includes("'unsafe-inline'") || pinned) inline = false;
    if (given === undefined) nonce = nonce ?? '';
    else nonce = nonce === undefined || nonce === given ? given : '';
    if (!sources.includes("'self'") || sources.includes("'strict-dynamic'")) self = false;
  }
  if (inline) return { inline: true };
  if (nonce) return { inline: true, nonce };
  return self ? { inline: false } : undefined;
}

/** A policy lets no script run on the page, from anywhere. */
const runsNoScript = (header: unknown): boolean =>
  (Array.isArray(header) ? header : [header]).flatMap((h) => String(h).split(',')).some((policy) => {
    const sources = scriptSources(policy);
    return sources !== undefined && sources.every((s) => s === "'none'");
  });

/** The sources of the directive that governs <script> elements, or undefined where none does. */
function scriptSources(policy: string): string[] | undefined {
  const directives = new Map<string, string[]>();
  for (const part of policy.split(';')) {
    const [name, ...sources] = part.trim().split(/\s+/);
    if (name && !directives.has(name.toLowerCase())) directives.set(name.toLowerCase(), sources);
  }
  return directives.get('script-src-elem') ?? directives.get('script-src') ?? directives.get('default-src');
}

const BODY_CLOSE = [Buffer.from('</body>'), Buffer.from('</BODY>')];

function lastBodyClose(body: Buffer): number {
  return Math.max(body.lastIndexOf(BODY_CLOSE[0]), body.lastIndexOf(BODY_CLOSE[1]));
}

function lastBodyCloseIn(body: string): number {
  const at = body.lastIndexOf('</body>');
  return at >= 0 ? at : body.lastIndexOf('</BODY>');
}
