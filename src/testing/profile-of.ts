import { isToken } from '../recording/token.js';
import type { Profile } from '../storage/profile.js';
import type { Dump } from '../recording/dump.js';
import { renderValue } from '../recording/render-value.js';
import { running } from './registry.js';

const TOKEN = 'x-debug-token';

/** The X-Debug-Token of a response (supertest's, light-my-request's, fetch's), a headers object or a Headers, or a token itself. */
export function tokenOf(x: unknown): string | undefined {
  if (typeof x === 'string') return isToken(x) ? x : undefined;
  if (x === null || typeof x !== 'object') return undefined;
  const get = (x as { get?: unknown }).get;
  if (typeof get === 'function' && !(x instanceof Map)) {
    try {
      const value = (get as (name: string) => unknown).call(x, TOKEN);
      if (isToken(value)) return value;
    } catch {
      // A `get` of another kind (supertest's request builder): read on.
    }
  }
  const headers = (x as { headers?: unknown }).headers ?? (x as { header?: unknown }).header;
  if (headers !== undefined && headers !== x) return tokenOf(headers);
  for (const [name, value] of Object.entries(x)) if (name.toLowerCase() === TOKEN && isToken(Array.isArray(value) ? value[0] : value)) return Array.isArray(value) ? value[0] : value;
  return undefined;
}

export interface ProfileOfOptions {
  /** The server's origin, for a test process that is not the server's: the profile is read from its JSON twin. */
  url?: string;
  /** Headers for that read (the profiler's key, where the server asks for it). */
  headers?: Record<string, string>;
}

/**
 * The whole profile of the request `x` answered, as plain data: every panel as the pages derive it.
 * Reads the profilers of this process (each writes what waits first), or, given `url`, the
 * server's JSON twin.
 */
/** A profile as a test reads it: every panel, and what the app dump()ed at hand (each value as a tree, and as text). */
export interface TestedProfile extends Profile {
  dumps: (Dump & { text: string })[];
}

const tested = (profile: Profile): TestedProfile => {
  const dumps = ((profile.collectors.dumps as { dumps?: Dump[] } | undefined)?.dumps ?? []).map((d) => ({ ...d, text: renderValue(d.value) }));
  return { ...profile, dumps };
};

export async function profileOf(x: unknown, options: ProfileOfOptions = {}): Promise<TestedProfile> {
  const token = tokenOf(x);
  if (token === undefined) throw new TypeError('profileOf(): no X-Debug-Token in what it was given (a response, its headers, or a token): is the profiler mounted, and enabled?');
  if (options.url !== undefined) {
    const res = await fetch(new URL(`/_profiler/${token}`, options.url), { headers: { accept: 'application/json', ...options.headers } });
    if (!res.ok) throw new Error(`profileOf(): ${options.url} answered ${res.status} for profile ${token}: ${(await res.text()).slice(0, 300)}`);
    return tested((await res.json()) as Profile);
  }
  const profilers = running();
  for (const profiler of profilers) {
    const profile = await profiler.read(token);
    if (profile !== undefined) return tested(profile);
  }
  throw new Error(`profileOf(): no profile ${token} in ${profilers.length === 0 ? 'this process (no profiler runs here' : `the ${profilers.length} profiler${profilers.length > 1 ? 's' : ''} of this process (`}): for a server in another process, pass { url }`);
}
