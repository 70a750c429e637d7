export const REDACTED = '[redacted]';

const SECRET_HEADERS = new Set(['authorization', 'proxy-authorization', 'x-profiler-secret', 'x-api-key']);
/** Our own headers name a profile, not a credential, though "token" is in their name. */
const PUBLIC_HEADERS = new Set(['x-debug-token', 'x-debug-token-link', 'x-previous-debug-token']);

export const isSecretKey = (key: string, keys: string[]): boolean => {
  const k = key.toLowerCase();
  return keys.some((s) => k.includes(s));
};

/** A copy of a parsed body or query with the values of secret-looking fields replaced, at any depth. */
export function redactValue(value: unknown, keys: string[], depth = 0): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (depth > 32) return '[too deep]';
  if (Array.isArray(value)) return value.map((v) => redactValue(v, keys, depth + 1));
  if (Buffer.isBuffer(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = isSecretKey(k, keys) && v !== '' && v != null ? REDACTED : redactValue(v, keys, depth + 1);
  }
  return out;
}

/**
 * Redact secret fields inside text we could not parse (a truncated JSON body, a form body):
 * `"password": "…"` and `password=…` forms. Wide enough to be safe, narrow enough to keep the rest readable.
 */
export function redactText(text: string, keys: string[]): string {
  // The JSON form needs a quote, the form encoding an "=": text with neither skips two regex scans.
  if (keys.length === 0 || (!text.includes('=') && !text.includes('"'))) return text;
  const { json, form } = patternsFor(keys);
  return text.replace(json, `$1"${REDACTED}"`).replace(form, `$1${REDACTED}`);
}

/** Compiled once per list of keys (the options' list is one array for the life of the profiler). */
const patterns = new WeakMap<string[], { json: RegExp; form: RegExp }>();
function patternsFor(keys: string[]) {
  let p = patterns.get(keys);
  if (!p) {
    const names = keys.map((k) => k.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|');
    p = {
      json: new RegExp(`("[^"]*(?:${names})[^"]*"\\s*:\\s*)("(?:[^"\\\\]|\\\\.)*"?|[^,}\\s]+)`, 'gi'),
      form: new RegExp(`((?:^|[&?\\s])[^=&\\s]*(?:${names})[^=&\\s]*=)[^&\\s]*`, 'gi'),
    };
    patterns.set(keys, p);
  }
  return p;
}

/** Header values with credentials cut: the scheme of Authorization stays, cookie names stay. */
export function redactHeaders(headers: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(headers)) {
    const n = name.toLowerCase();
    if (value == null) continue;
    if (SECRET_HEADERS.has(n)) out[name] = redactCredentials(String(value));
    else if (n === 'cookie') out[name] = redactCookieHeader(String(value));
    else if (n === 'set-cookie') out[name] = (Array.isArray(value) ? value : [value]).map((v) => redactSetCookie(String(v)));
    else if (isSecretKey(n, keys) && !PUBLIC_HEADERS.has(n)) out[name] = REDACTED;
    else out[name] = value;
  }
  return out;
}

const redactCredentials = (value: string) => {
  const scheme = /^([A-Za-z][\w-]*)\s+\S/.exec(value);
  return scheme ? `${scheme[1]} ${REDACTED}` : REDACTED;
};

export const redactCookieHeader = (value: string): string =>
  value.split(';').map((pair) => {
    const eq = pair.indexOf('=');
    return eq < 0 ? pair : `${pair.slice(0, eq)}=${REDACTED}`;
  }).join(';');

const redactSetCookie = (value: string) => {
  const semi = value.indexOf(';');
  const first = semi < 0 ? value : value.slice(0, semi);
  const eq = first.indexOf('=');
  const named = eq < 0 ? REDACTED : `${first.slice(0, eq)}=${REDACTED}`;
  return semi < 0 ? named : named + value.slice(semi);
};

/** Cookie names from a Cookie header; their values are never kept. */
export function cookieNames(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!header) return out;
  for (const pair of header.split(';')) {
    const eq = pair.indexOf('=');
    const name = (eq < 0 ? pair : pair.slice(0, eq)).trim();
    if (name) out[name] = REDACTED;
  }
  return out;
}
