import { hide } from './hidden.js';
import { isSecretHeader, isSecretKey } from './redact.js';
import { ANCHOR, SecretIndex } from './secret-index.js';

/** Shorter values are too likely to be something else (an id, a flag) to hide by equality. */
const SHORTEST = 4;

/** What of a request its secrets are read from, before anything is redacted. */
export interface RequestValues {
  query: unknown;
  /** What a body parser made of the body, or the body as text or bytes when none read it. */
  body: unknown;
  rawBody?: Uint8Array | string;
  params: unknown;
  /** The request's headers as [name, value] pairs, names in any case. */
  headers: Iterable<[string, string]>;
  /** The response's Set-Cookie lines. */
  setCookies: string[];
}

/**
 * The values this request's profile redacts elsewhere: fields named like secrets in its query,
 * body and route parameters, credential headers, cookies it carried or set. A statement's value
 * equal to one of them is hidden too, whatever column it goes with (one the profiler cannot tell:
 * `INSERT INTO users VALUES (?, ?)`, `crypt(?, salt)`).
 */
export class RequestSecrets {
  private readonly values = new Set<string>();
  /** Those long enough to be cut out of a longer value (ANCHOR characters and more). */
  private readonly within = new SecretIndex();

  static of(r: RequestValues, keys: string[]): RequestSecrets {
    const secrets = new RequestSecrets();
    secrets.addUnder(r.query, keys, false);
    secrets.addUnder(r.body, keys, false);
    secrets.addUnder(r.params, keys, false);
    if (r.body === undefined && r.rawBody !== undefined) secrets.addUnder(parsedText(r.rawBody), keys, false);
    for (const [name, value] of r.headers) {
      const n = name.toLowerCase();
      if (n === 'cookie') for (const v of cookieValues(value)) secrets.add(v);
      else if (isSecretHeader(n, keys)) secrets.add(value.replace(/^[A-Za-z][\w-]*\s+(?=\S)/, ''));
    }
    for (const line of r.setCookies) for (const v of cookieValues(line.split(';')[0])) secrets.add(v);
    return secrets;
  }

  get size(): number {
    return this.values.size;
  }

  /** However many a client sends: a cap would let its values crowd out the one a statement repeats. */
  add(value: string): void {
    if (value.length < SHORTEST) return;
    this.keep(value);
    // A signed cookie (`s:<id>.<signature>`, express-session's) is stored by its id.
    const signed = /^s:([^.]+)\./.exec(value);
    if (signed) this.keep(signed[1]);
  }

  private keep(value: string): void {
    this.values.add(value);
    this.within.add(value);
  }

  /**
   * Whether `value` is one of the request's secrets or holds one. A part of a secret is none
   * (`development` of an `Authorization: *:development.<hash>`): it is what the secret is made of.
   */
  covers(value: unknown): boolean {
    if (typeof value !== 'string' || value.length < SHORTEST || this.values.size === 0) return false;
    return this.values.has(value) || (value.length >= ANCHOR && this.within.in(value, false));
  }

  /** `value` with the request's secrets cut out of it and the rest kept (a prompt that quotes the caller's token, a key `sess:<id>`). */
  cut(value: string): string {
    if (this.values.has(value)) return hide(value);
    if (value.length < ANCHOR) return value;
    const found = this.within.find(value, false);
    if (found.length === 0) return value;
    let out = '';
    let from = 0;
    for (const f of found) {
      out += value.slice(from, f.start) + hide(value.slice(f.start, f.end));
      from = f.end;
    }
    return out + value.slice(from);
  }

  /** Strings under secret keys, at any depth (within a bound). */
  private addUnder(value: unknown, keys: string[], secret: boolean, depth = 0): void {
    if (depth > 8 || value === null || value === undefined) return;
    if (typeof value === 'string') {
      if (secret) this.add(value);
      return;
    }
    if (typeof value !== 'object' || ArrayBuffer.isView(value)) return;
    const entries = Array.isArray(value) ? value.map((v) => ['', v] as const) : Object.entries(value as Record<string, unknown>);
    for (const [key, v] of entries) this.addUnder(v, keys, secret || (key !== '' && isSecretKey(key, keys)), depth + 1);
  }
}

function cookieValues(header: string): string[] {
  const out: string[] = [];
  for (const pair of header.split(';')) {
    const eq = pair.indexOf('=');
    if (eq < 0) continue;
    const raw = pair.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1');
    out.push(raw);
    try {
      const decoded = decodeURIComponent(raw);
      if (decoded !== raw) out.push(decoded);
    } catch {
      // Not percent-encoded text: the raw value stands.
    }
  }
  return out;
}

/** A body kept as text that no parser read: JSON, or a form. */
function parsedText(bytes: Uint8Array | string): unknown {
  const text = (typeof bytes === 'string' ? bytes : Buffer.from(bytes).toString('utf8')).trim();
  if (text.length > 64 * 1024) return undefined;
  if (text.startsWith('{') || text.startsWith('[')) {
    try {
      return JSON.parse(text);
    } catch {
      return undefined;
    }
  }
  return text.includes('=') ? Object.fromEntries(new URLSearchParams(text)) : undefined;
}

/** A parsed value (JSON) with the request's secrets cut out of its texts, and each text that `also` picks replaced. */
export function hideSecrets(value: unknown, secrets: RequestSecrets | undefined, also?: (text: string) => boolean): unknown {
  if (typeof value === 'string') return also?.(value) ? hide(value) : secrets === undefined ? value : secrets.cut(value);
  if (Array.isArray(value)) return value.map((v) => hideSecrets(v, secrets, also));
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, hideSecrets(v, secrets, also)]));
  return value;
}
