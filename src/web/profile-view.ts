// What the profile pages show of a derived profile besides its panels: the menu, the toolbar's
// summary, the requests it can replay, the link to its parent.
import type { SecurityData, ShownCheck } from '../collectors/security.js';
import type { PanelInfo } from '../collectors/collector.js';
import type { BodyData } from '../redaction/body.js';
import { profileLink } from '../recording/token.js';
import type { Profile } from '../storage/profile.js';
import type { Replayable } from './replay.js';
import type { Dump } from '../recording/dump.js';
import type { ValueNode } from '../recording/snapshot-value.js';
import { renderValue } from '../recording/render-value.js';
import { userLabel } from '../redaction/who.js';

export interface MenuEntry {
  id: string;
  title: string;
  badge?: string | number;
  /** The panel holds errors (or, for logs, warnings): its badge stands out. */
  level?: 'error' | 'warn';
  available: boolean;
}

/** Panels a command has nothing for (as Symfony hides them for its console profiles), and the one only a command has. */
const REQUEST_ONLY = new Set(['request', 'response', 'routing']);
const COMMAND_ONLY = new Set(['command']);

export function menuOf(profile: Profile, panels: PanelInfo[]): MenuEntry[] {
  const hidden = profile.type === 'command' ? REQUEST_ONLY : COMMAND_ONLY;
  return panels.filter((c) => !hidden.has(c.id)).map((c) => {
    const data = profile.collectors[c.id];
    let badge: string | number | undefined;
    try {
      badge = data === undefined ? undefined : c.badge?.(data as never);
    } catch {
      badge = undefined;
    }
    return { id: c.id, title: c.title, badge, level: levelOf(c.id, data), available: data !== undefined || Boolean(profile.collectorErrors?.[c.id]) };
  });
}

/** Whether a panel holds what went wrong: an exception, error lines (warnings), failed statements, calls, commands, messages. */
function levelOf(id: string, data: unknown): MenuEntry['level'] {
  if (data === undefined || data === null) return undefined;
  if (id === 'exception') return 'error';
  const d = data as { counts?: { error?: number; warn?: number }; errors?: unknown; failed?: unknown; status?: unknown };
  if (id === 'security') return ((data as { refused?: number }).refused ?? 0) > 0 ? 'warn' : undefined;
  if (id === 'translations') return ((data as { counts?: { missing?: number } }).counts?.missing ?? 0) > 0 ? 'warn' : undefined;
  if (id === 'logs') return (d.counts?.error ?? 0) > 0 ? 'error' : (d.counts?.warn ?? 0) > 0 ? 'warn' : undefined;
  if (id === 'response' && typeof d.status === 'number') return d.status >= 500 ? 'error' : d.status >= 400 ? 'warn' : undefined;
  if ((typeof d.errors === 'number' && d.errors > 0) || (typeof d.failed === 'number' && d.failed > 0)) return 'error';
  // A likely N+1 is a warning.
  return ((data as { nPlusOne?: number }).nPlusOne ?? 0) > 0 ? 'warn' : undefined;
}

/** What a failed request that threw nothing shows first: see failureOf. */
export interface Failure {
  status: number;
  title: string;
  /** What the response said: a JSON `message`, `error`, `detail` or `title`, or its text. */
  message?: string;
  /** The app's lines that sent it, innermost first. */
  answeredAt: string[];
  /** The middleware that answered, and where the app mounted it, when no line of the app's sent it. */
  answeredBy?: { name: string; at?: string };
  /** Who said no, and why, as the library said it (see collectors/security.ts): what the card leads with. */
  refusals: ShownCheck[];
  /** Its error and warning log lines, first ones first (n: the line's place in the logs panel). */
  lines: { n: number; level: string; message: string; logger?: string }[];
  moreLines: number;
}

const SHOWN_LINES = 5;
const MESSAGE_KEYS = ['message', 'error', 'detail', 'title', 'error_description', 'reason'];

/**
 * A 4xx or 5xx that no exception explains (a refused sign-in, a validation's 422): what the
 * response said, the line that sent it, and the request's warnings and errors, on the page a
 * profile link opens, so that why it failed takes no click. Undefined for anything else.
 */
export function failureOf(profile: Profile): Failure | undefined {
  if (profile.type === 'command' || profile.status < 400 || profile.collectors.exception !== undefined) return undefined;
  const response = profile.collectors.response as { statusMessage?: string; body?: BodyData; answeredAt?: string[]; answeredBy?: { name: string; at?: string } } | undefined;
  const refusals = ((profile.collectors.security as SecurityData | undefined)?.checks ?? []).filter((c) => c.verdict !== 'passed');
  const logs = (profile.collectors.logs as { lines?: { level: string; message: string; logger?: string }[] } | undefined)?.lines ?? [];
  const failing = logs.map((line, i) => ({ n: i + 1, level: line.level, message: line.message, logger: line.logger })).filter((line) => line.level === 'error' || line.level === 'warn');
  return {
    status: profile.status,
    title: response?.statusMessage ?? '',
    message: response?.body === undefined ? undefined : messageOf(response.body),
    answeredAt: response?.answeredAt ?? [],
    // Named once: a refusal that gives the same line says it already.
    answeredBy: response?.answeredAt?.length || refusals.some((c) => c.at === response?.answeredBy?.at) ? undefined : response?.answeredBy,
    refusals,
    lines: failing.slice(0, SHOWN_LINES),
    moreLines: Math.max(0, failing.length - SHOWN_LINES),
  };
}

/** The message a response body gives, as APIs give one (problem JSON, `{ error }`, `{ errors: [{ message }] }`), or its text. */
function messageOf(body: BodyData): string | undefined {
  const found = (value: unknown, depth: number): string | undefined => {
    if (typeof value === 'string') return value.trim() === '' ? undefined : value;
    if (depth > 2 || value === null || typeof value !== 'object') return undefined;
    if (Array.isArray(value)) return value.length > 0 ? found(value[0], depth + 1) : undefined;
    const o = value as Record<string, unknown>;
    for (const key of MESSAGE_KEYS) {
      const text = found(o[key], depth + 1);
      if (text !== undefined) return text;
    }
    return found(o.errors, depth + 1);
  };
  const text = body.json !== undefined ? found(body.json, 0) : body.kind === 'text' && !/html|xml/i.test(body.contentType ?? '') ? body.text?.trim() : undefined;
  return text === undefined || text === '' ? undefined : text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

/** A value on one line, cut to what a toolbar shows. */
const preview = (node: ValueNode): string => {
  const text = renderValue(node).replace(/\s*\n\s*/g, ' ');
  return text.length > 120 ? `${text.slice(0, 119)}…` : text;
};

/** What the toolbar shows, from a stored profile. */
export function toolbarSummary(profile: Profile) {
  const c = profile.collectors as Record<string, any>;
  return {
    token: profile.token,
    status: profile.status,
    method: profile.method,
    url: profile.url,
    route: c.routing?.route ?? null,
    handler: c.routing?.handler ?? null,
    duration: profile.duration,
    rss: c.performance?.rss ?? null,
    queries: c.db?.count ?? 0,
    queryTime: c.db?.time ?? 0,
    nPlusOne: c.db?.nPlusOne ?? 0,
    cpu: c.cpu?.samples ?? null,
    calls: c.http_client?.count ?? 0,
    callErrors: c.http_client?.errors ?? 0,
    commands: c.cache?.count ?? 0,
    hits: c.cache?.hits ?? 0,
    misses: c.cache?.misses ?? 0,
    cacheTime: c.cache?.time ?? 0,
    renders: c.views?.count ?? 0,
    renderTime: c.views?.time ?? 0,
    mails: c.mail?.count ?? 0,
    aiCalls: c.ai?.count ?? 0,
    aiTokens: (c.ai?.inputTokens ?? 0) + (c.ai?.outputTokens ?? 0),
    aiTime: c.ai?.time ?? 0,
    aiErrors: c.ai?.errors ?? 0,
    logs: c.logs?.lines?.length ?? 0,
    errors: (c.logs?.counts?.error ?? 0) + (c.exception ? 1 : 0),
    warnings: c.logs?.counts?.warn ?? 0,
    exception: c.exception?.chain?.[0] ? `${c.exception.chain[0].class}: ${c.exception.chain[0].message}` : null,
    // Who made it and how they were known: "ada · session".
    who: c.security?.who ? (userLabel(c.security.who) ?? 'anonymous') : null,
    via: c.security?.who ? [c.security.who.via, c.security.who.key].filter(Boolean).join(' ') : null,
    // What was dumped: each with its label, line and a line of its value, for the toolbar's list.
    dumps: ((c.dumps?.dumps ?? []) as Dump[]).slice(0, 20).map((d, i) => ({ n: i + 1, label: d.label ?? null, at: d.at ?? null, preview: preview(d.value) })),
    dumpCount: c.dumps?.dumps?.length ?? 0,
    translations: c.translations?.messages?.length ?? 0,
    missingTranslations: c.translations?.counts?.missing ?? 0,
    profile: `/_profiler/${profile.token}`,
  };
}

export function replayOf(profile: Profile): Replayable | undefined {
  const request = profile.collectors.request as { headers?: Record<string, unknown>; body?: BodyData } | undefined;
  if (!request) return undefined;
  return { method: profile.method, url: profile.url, headers: request.headers ?? {}, body: request.body };
}

export function callReplayOf(profile: Profile, n: number): Replayable | undefined {
  const call = (profile.collectors.http_client as { requests?: { method: string; url: string; requestHeaders: Record<string, unknown> }[] } | undefined)?.requests?.[n];
  return call && { method: call.method, url: call.url, headers: call.requestHeaders };
}

/** Where the calling request's profile is: the link the caller sent with its token. */
export function parentLinkOf(profile: Profile, known: (hostname: string) => boolean): string | undefined {
  const headers = (profile.collectors.request as { headers?: Record<string, unknown> } | undefined)?.headers;
  return profileLink(headers?.['x-debug-parent-link'], profile.parent, known);
}
