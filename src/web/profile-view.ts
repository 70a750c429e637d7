// What the profile pages show of a derived profile besides its panels: the menu, the toolbar's
// summary, the requests it can replay, the link to its parent.
import type { PanelInfo } from '../collectors/collector.js';
import type { BodyData } from '../redaction/body.js';
import { profileLink } from '../recording/token.js';
import type { Profile } from '../storage/profile.js';
import type { Replayable } from './replay.js';

export interface MenuEntry {
  id: string;
  title: string;
  badge?: string | number;
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
    return { id: c.id, title: c.title, badge, available: data !== undefined || Boolean(profile.collectorErrors?.[c.id]) };
  });
}

/** What the toolbar shows, from a stored profile. */
export function toolbarSummary(profile: Profile) {
  const c = profile.collectors as Record<string, any>;
  return {
    token: profile.token,
    status: profile.status,
    method: profile.method,
    url: profile.url,
    route: c.routing?.route ?? null,
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
