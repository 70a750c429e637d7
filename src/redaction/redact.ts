import { setOwn } from '../recording/plain.js';
import { hide, noteHidden, REDACTED } from './hidden.js';

export { REDACTED };

/** Headers that carry a credential whatever their name: the value goes, at most a known scheme stays. */
const SECRET_HEADERS = new Set(['authorization', 'proxy-authorization', 'x-profiler-secret', 'x-api-key', 'x-auth-token', 'x-csrf-token', 'x-xsrf-token', 'ocp-apim-subscription-key']);
/** The schemes whose name is worth keeping in Authorization: anything else may be part of the secret. */
const AUTH_SCHEMES = /^(basic|bearer|digest|negotiate|ntlm|hoba|mutual|token|dpop|gnap|vapid|scram-sha-1|scram-sha-256|aws4-hmac-sha256|apikey)$/i;
/** Headers whose names look secret but whose values are not: our own, and challenges or lists of header names. */
const PUBLIC_HEADERS = new Set([
  'x-debug-token', 'x-debug-token-link', 'x-previous-debug-token', 'x-debug-parent-token', 'x-debug-parent-link', 'www-authenticate', 'proxy-authenticate',
  'access-control-allow-credentials', 'access-control-allow-headers', 'access-control-request-headers', 'access-control-expose-headers',
]);

/** Answers by key list: the same few header and field names come back on every profile. */
const answered = new WeakMap<string[], Map<string, boolean>>();
const MAX_REMEMBERED = 2_000;

/**
 * Whether a field, parameter or header name is a secret's: it holds one of `keys` as a word of
 * its own (`auth`, `authToken`, `x-auth-token`, `AUTH_KEY`; not `author`, `authority`). Keys of
 * five characters or more (`password`, `token`, `secret`) also count inside a longer word
 * (`userpassword`, `accesstoken`), where nothing else reads like them. A name is read for what it
 * means: where the word after the secret's says it names something about it (`auth_method`,
 * `token_type`, `password_reset_at`), it holds no secret; `session_id`, `password_hash`,
 * `password_confirmation` still do.
 */
export const isSecretKey = (key: string, keys: string[]): boolean => {
  let known = answered.get(keys);
  if (known === undefined) answered.set(keys, (known = new Map()));
  let secret = known.get(key);
  if (secret === undefined) {
    const k = key.toLowerCase();
    let words: string[] | undefined;
    secret = keys.some((s) => k.includes(s) && (s.length >= WHOLE_WORD_BELOW || (words ??= wordsOf(key)).includes(s))) && !aboutTheSecret(words ?? wordsOf(key), keys);
    // Names an app makes up per request (ids as keys) would grow it without end: start again.
    if (known.size >= MAX_REMEMBERED) known.clear();
    known.set(key, secret);
  }
  return secret;
};

/**
 * Words that, right after the secret's, make a name about the secret rather than the secret
 * itself: how it is sent, when it expires, whether it is set. Never `id`, `key`, `hash`, `value`,
 * `header`: `session_id`, `auth_header` hold one.
 */
const ABOUT = new Set([
  // what it is called, and of what kind
  'name', 'names', 'label', 'title', 'method', 'methods', 'type', 'types', 'kind', 'kinds', 'mode', 'scheme', 'strategy', 'provider', 'source', 'format', 'version', 'policy', 'strength', 'hint', 'level', 'status',
  // whether it is there, and where it is sent
  'required', 'enabled', 'disabled', 'set', 'changed', 'updated', 'reset', 'url', 'uri', 'endpoint',
  // when, for how long, how many, how long a text
  'expires', 'expiry', 'expiration', 'exp', 'expired', 'issued', 'created', 'used', 'at', 'time', 'date', 'timestamp', 'ttl', 'age', 'lifetime', 'timeout', 'duration', 'length', 'len', 'count', 'size',
]);

/**
 * Whether every place a secret's key stands in the name's words is followed by a word of ABOUT:
 * then the name is about the secret (`auth_method`), not the secret.
 */
function aboutTheSecret(words: string[], keys: string[]): boolean {
  let met = false;
  for (let i = 0; i < words.length; i++) {
    const w = words[i];
    const at = keys.some((s) => w === s || (s.length >= WHOLE_WORD_BELOW && w.includes(s)) || endsSequence(words, i, s));
    if (!at) continue;
    met = true;
    if (!ABOUT.has(words[i + 1] ?? '')) return false;
  }
  return met;
}

/** Whether a key of several words (`api_key`, `private-key`) ends at word i of the name. */
function endsSequence(words: string[], i: number, key: string): boolean {
  if (!/[^a-z0-9]/.test(key)) return false;
  const parts = key.split(/[^a-z0-9]+/).filter(Boolean);
  if (parts.length > i + 1) return false;
  return parts.every((part, j) => words[i - parts.length + 1 + j] === part);
}

/**
 * A secret's name that holds an object of other names: a `session` object is its attributes (a
 * cart, a user id, a CSRF secret), each redacted by its own name, not hidden whole. A session
 * that is a text (an id) is a secret still.
 */
export const isContainer = (key: string, value: unknown): boolean =>
  value !== null && typeof value === 'object' && !Array.isArray(value) && !ArrayBuffer.isView(value) && key.length === 7 && key.toLowerCase() === 'session';

/** A session container's own names that are its id, the key to it (Lucia's `session.id`): hidden as a secret's value. */
export const isSessionId = (key: string): boolean => SESSION_IDS.has(key.toLowerCase());
const SESSION_IDS = new Set(['id', '_id', 'sid', 'key', 'value', 'sessionid']);

/** Keys shorter than this are matched as whole words only: `auth` is not in `author`. */
const WHOLE_WORD_BELOW = 5;

/** `x-authToken_v2` → x, auth, token, v2: words split at separators and at camelCase humps. */
const wordsOf = (key: string): string[] =>
  key.replace(/([a-z0-9])([A-Z])/g, '$1 $2').replace(/([A-Z])([A-Z][a-z])/g, '$1 $2').toLowerCase().split(/[^a-z0-9]+/).filter(Boolean);

/**
 * Password hashes by their shape, wherever they appear (a column named `hash`, a log line): bcrypt,
 * argon2, scrypt, PBKDF2 in the modular crypt and Django forms, and crypt(3)'s SHA and MD5 ones.
 */
const PASSWORD_HASH = /\$(?:2[abxy]?\$\d\d\$[./A-Za-z0-9]{53}|(?:argon2(?:id|i|d)|scrypt|pbkdf2(?:-sha\d+)?)\$[^\s'"`;)]+|7\$[./A-Za-z0-9]{11,}[^\s'"`;)]*|[156]\$(?:rounds=\d+\$)?[./A-Za-z0-9]{1,16}\$[./A-Za-z0-9]{22,})|\bpbkdf2_sha\d+\$\d+\$[^\s'"`,;)$]+\$[A-Za-z0-9+/=]{20,}/g;

/**
 * Credentials by the shapes secret scanners know, wherever they are written as prose (a log line,
 * an error message): a bearer token, a JWT, AWS access key ids, GitHub, Stripe and Slack tokens.
 */
const CREDENTIAL = /\b(Bearer\s+)[A-Za-z0-9\-._~+/]{8,}=*|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}|\b(?:AKIA|ASIA)[A-Z0-9]{16}\b|\bgh[pousr]_[A-Za-z0-9]{30,}|\bgithub_pat_[A-Za-z0-9_]{30,}|\b[sr]k_(?:live|test)_[A-Za-z0-9]{10,}|\bxox[abprs]-[A-Za-z0-9-]{10,}/g;
/** Most texts have none of what the shapes start with: they skip the replace. */
const CREDENTIAL_HINT = /Bearer|eyJ|AKIA|ASIA|gh[pousr]_|github_pat_|[sr]k_(?:live|test)_|xox[abprs]-/;

const redactHashes = (text: string): string => {
  if (text.includes('$')) text = text.replace(PASSWORD_HASH, (hash) => hide(hash));
  return CREDENTIAL_HINT.test(text) ? text.replace(CREDENTIAL, (whole, bearer: string | undefined) => (bearer ?? '') + hide(whole.slice(bearer?.length ?? 0))) : text;
};

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** The most nodes one redactValue() copy visits: a bound on what a hostile shape can cost. */
const MAX_NODES = 200_000;

/**
 * A copy of a parsed body, query or context with the values of secret-looking fields replaced, at
 * any depth. Redaction hides secret values, not structure: under a secret key, booleans, numbers,
 * null and dates stay (`"password": false`), and an object keeps its shape and its e-mail
 * addresses while every other text in it goes. Cycles are cut and every node is visited at most
 * once per path, within a bound. Keys are copied as own properties (setOwn), so `__proto__` stays
 * an ordinary key.
 */
export function redactValue(value: unknown, keys: string[]): unknown {
  let nodes = 0;
  const ancestors: object[] = [];
  const walk = (v: unknown, secret: boolean, session = false): unknown => {
    if (typeof v === 'string') return secret ? (v === '' || EMAIL.test(v) ? v : hide(v)) : redactText(v, keys);
    if (v === null || typeof v !== 'object') return v;
    if (++nodes > MAX_NODES) return '[too large]';
    if (ancestors.includes(v)) return '[circular]';
    if (ArrayBuffer.isView(v)) return secret ? REDACTED : v;
    if (v instanceof Date) return v;
    ancestors.push(v);
    try {
      if (Array.isArray(v)) return v.map((item) => walk(item, secret));
      const out: Record<string, unknown> = {};
      const fed = fedVariables(v as Record<string, unknown>, keys);
      const field = secret ? false : secretField(v as Record<string, unknown>, keys);
      for (const k of Object.keys(v)) {
        const inner = (v as Record<string, unknown>)[k];
        const contained = isContainer(k, inner);
        const hidden = secret || (isSecretKey(k, keys) && !contained) || (field && k === 'value') || (session && isSessionId(k));
        setOwn(out, k, walk(fed !== undefined && k === 'variables' ? withoutFed(inner, fed) : inner, hidden, contained));
      }
      return out;
    } finally {
      ancestors.pop();
    }
  };
  return walk(value, false);
}

/** What names the field a `{ name | path | key | label | field | param, value }` object is (a validator's error, a pair): joi's path is an array. */
const FIELD_NAMES = ['name', 'path', 'key', 'label', 'field', 'param'];

/**
 * Whether an object is one field whose `value` is a secret: named like one, or a cookie's or a
 * header's (a validator's `{ location: 'cookies', value }`), whatever its name.
 */
function secretField(v: Record<string, unknown>, keys: string[]): boolean {
  if (!Object.hasOwn(v, 'value')) return false;
  const location = v.location;
  if (location === 'cookies' || location === 'headers') return true;
  for (const name of FIELD_NAMES) {
    const given = Object.hasOwn(v, name) ? v[name] : undefined;
    const text = typeof given === 'string' ? given : Array.isArray(given) ? given.filter((p) => typeof p === 'string').join('.') : undefined;
    if (text !== undefined && text !== '' && isSecretKey(text, keys)) return true;
  }
  return false;
}

/** An argument given a variable in a GraphQL document: `password: $p`, in a call or an input object. */
const ARGUMENT_VARIABLE = /([_A-Za-z][_0-9A-Za-z]*)\s*:\s*\$([_A-Za-z][_0-9A-Za-z]*)/g;

/**
 * A GraphQL request's variables that feed an argument named like a secret, whatever their own
 * names (`login(email: $e, password: $p)` makes `$p` one): undefined for anything else.
 */
function fedVariables(v: Record<string, unknown>, keys: string[]): Set<string> | undefined {
  const document = v.query;
  if (typeof document !== 'string' || v.variables === undefined || !document.includes('$')) return undefined;
  let fed: Set<string> | undefined;
  for (const [, argument, variable] of document.matchAll(ARGUMENT_VARIABLE)) if (isSecretKey(argument, keys)) (fed ??= new Set()).add(variable);
  return fed;
}

/** Variables (an object, or its JSON as a GET's query string gives it) with the fed ones hidden. */
function withoutFed(variables: unknown, fed: Set<string>): unknown {
  if (typeof variables === 'string') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(variables);
    } catch {
      return variables;
    }
    return parsed !== null && typeof parsed === 'object' ? JSON.stringify(withoutFed(parsed, fed)) : variables;
  }
  if (variables === null || typeof variables !== 'object' || Array.isArray(variables)) return variables;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(variables)) setOwn(out, k, fed.has(k) ? hide((variables as Record<string, unknown>)[k]) : (variables as Record<string, unknown>)[k]);
  return out;
}

/**
 * `key: value`, `"key": value`, `'key': value` (JSON, util.inspect, prose): the key, then where its
 * value starts. A key that continues a word or a path (`/etc/passwd:1:1`) is none.
 */
const KEY_COLON = /(?<![\w$./\\-])("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|[A-Za-z_$][\w$-]*)\s*[:=]>?\s*/g;
/** `name=value` in a query string, a form body or a cookie-like list; the name may be percent-encoded. */
const NAME_EQUALS = /(^|[&?;,\s])([^=&?;,\s]+)=([^&?;,\s#]*)/g;

/**
 * Redact secret-looking fields inside text: JSON (objects and arrays under a secret key included),
 * util.inspect output (what console.log of an object writes), `key: value` prose, query strings and
 * form bodies (percent-encoded names too). Wide enough to be safe, narrow enough to keep the rest
 * readable.
 */
export function redactText(text: string, keys: string[]): string {
  text = redactHashes(text);
  // A URL's password, wherever a URL is written (a log line, an error's message, a view's locals, a span's attribute).
  if (text.includes('://') && text.includes('@')) text = text.replace(URL_PASSWORD, (_whole, user: string, password: string) => `${user}:${hide(password)}@`);
  if (keys.length === 0) return text;
  const colon = text.includes(':') || text.includes('=>');
  const equals = text.includes('=');
  if (!colon && !equals) return text;
  // A name is secret only if it holds a key, as written or percent-encoded: a text with neither
  // (most header values, most log lines) has nothing to redact, and skips the regexes.
  if (!text.includes('%') && !mentionsKey(text, keys)) return text;
  let out = colon ? redactKeyValues(text, keys) : text;
  if (equals) {
    out = out.replace(NAME_EQUALS, (whole, lead: string, name: string, value: string) =>
      value !== '' && isSecretKey(decodeName(name), keys) ? `${lead}${name}=${hideEncoded(value)}` : whole);
  }
  return out;
}

/** The password of a URL's user (`scheme://user:password@host`). */
const URL_PASSWORD = /\b([a-z][a-z0-9+.-]*:\/\/[^\s/:@]*):([^\s/@]*)@/gi;

/** HTML: as text, and each text node again (a tag's `>` is no separator redactText knows: `<p>password=…`). */
export function redactMarkup(html: string, keys: string[]): string {
  const text = redactText(html, keys);
  if (!mentionsKey(text, keys)) return text;
  return text.replace(/>([^<]+)</g, (whole, inner: string) => {
    const redacted = redactText(inner, keys);
    return redacted === inner ? whole : `>${redacted}<`;
  });
}

/** One case-insensitive alternation of a key list, made once: most texts a record holds are tested, and mention none. */
const mentioning = new WeakMap<string[], RegExp>();

function mentionsKey(text: string, keys: string[]): boolean {
  if (keys.length === 0) return false;
  let re = mentioning.get(keys);
  if (re === undefined) mentioning.set(keys, (re = new RegExp(keys.map((k) => k.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&')).join('|'), 'i')));
  return re.test(text);
}

function redactKeyValues(text: string, keys: string[]): string {
  let out = '';
  let from = 0;
  KEY_COLON.lastIndex = 0;
  for (let m = KEY_COLON.exec(text); m; m = KEY_COLON.exec(text)) {
    const key = m[1];
    const bare = key[0] === '"' || key[0] === "'" ? key.slice(1, -1) : key;
    if (!isSecretKey(bare, keys)) continue;
    // `=` belongs to the name=value pass when it is not `=>` (a Ruby- or PHP-style dump).
    if (m[0].includes('=') && !m[0].includes('=>')) continue;
    const start = m.index + m[0].length;
    const end = valueEnd(text, start);
    if (end === start) continue;
    const quoted = /["'`[{]/.test(text[start]);
    const value = text.slice(start, end);
    out += text.slice(from, start) + (quoted ? `"${hide(/^["'`]/.test(value) ? unescaped(value) : value)}"` : hide(value));
    from = end;
    KEY_COLON.lastIndex = end;
  }
  return from === 0 ? text : out + text.slice(from);
}

/** Where the value starting at `start` ends: a quoted string, a bracketed structure (strings inside skipped), or a bare run. */
function valueEnd(text: string, start: number): number {
  const first = text[start];
  if (first === '"' || first === "'" || first === '`') return quoteEnd(text, start);
  if (first === '[' || first === '{' || first === '(') {
    let depth = 0;
    for (let i = start; i < text.length; i++) {
      const c = text[i];
      if (c === '"' || c === "'" || c === '`') i = quoteEnd(text, i) - 1;
      else if (c === '[' || c === '{' || c === '(') depth++;
      else if ((c === ']' || c === '}' || c === ')') && --depth === 0) return i + 1;
    }
    return text.length;
  }
  let i = start;
  while (i < text.length && !',;}]\r\n&'.includes(text[i])) i++;
  return i;
}

function quoteEnd(text: string, start: number): number {
  const quote = text[start];
  for (let i = start + 1; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === quote) return i + 1;
  }
  return text.length;
}

/** A quoted value's text: JSON's escapes read, else the quotes dropped. */
function unescaped(quoted: string): string {
  try {
    const read: unknown = JSON.parse(quoted);
    if (typeof read === 'string') return read;
  } catch {
    // Not JSON: single quotes, a template, or cut short.
  }
  return quoted.slice(1, quoted.endsWith(quoted[0]) ? -1 : undefined);
}

/** A percent-encoded value hidden as itself and as it reads decoded. */
function hideEncoded(value: string): string {
  const decoded = decodeName(value);
  if (decoded !== value) noteHidden(decoded);
  return hide(value);
}

function decodeName(name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' '));
  } catch {
    return name;
  }
}

/** Header values with credentials cut: a known scheme of Authorization stays, cookie names stay, secrets in URLs and parameters go. */
export function redactHeaders(headers: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of Object.keys(headers)) {
    const value = headers[name];
    if (value != null) setOwn(out, name, redactHeader(name.toLowerCase(), value, keys));
  }
  return out;
}

/**
 * Parameter names that are secrets in a URL's query string only, where they are an API key
 * (`?key=`, Google's) or an OAuth authorization code (`?code=`); in a body or a log line they are
 * too often something else to hide.
 */
const QUERY_ONLY = /([?&])(key|code)=([^&#]+)/gi;

/**
 * A URL as it may be stored: secrets in its query string (by `keys`, and `key` and `code`), and
 * the path segments that hold a route parameter named like a secret (`/reset/:token`, a magic
 * link, a webhook's secret): `routeParams` are the request's, by name.
 */
export function redactUrl(url: string, keys: string[], routeParams?: unknown): string {
  let out = redactText(url, keys);
  const q = out.indexOf('?');
  if (q >= 0) out = out.slice(0, q) + redactVariables(out.slice(q).replace(QUERY_ONLY, (_whole, lead: string, name: string, value: string) => `${lead}${name}=${hideEncoded(value)}`), keys);
  if (routeParams === null || typeof routeParams !== 'object') return out;
  const secret = new Set<string>();
  for (const [name, value] of Object.entries(routeParams as Record<string, unknown>)) {
    if (!isSecretKey(name, keys)) continue;
    // Express 5 gives a wildcard's segments as an array.
    for (const v of Array.isArray(value) ? value : [value]) {
      if (typeof v === 'string' && v !== '') {
        secret.add(v);
        noteHidden(v);
      }
    }
  }
  if (secret.size === 0) return out;
  const end = out.search(/[?#]/);
  const path = (end < 0 ? out : out.slice(0, end)).split('/').map((segment) => (secret.has(segment) || secret.has(decoded(segment)) ? REDACTED : segment)).join('/');
  return path + (end < 0 ? '' : out.slice(end));
}

const decoded = (segment: string) => {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
};

/** A GraphQL GET's variables (`?query=…&variables={"password":…}`): JSON, percent-encoded, redacted as the parsed query is. */
function redactVariables(search: string, keys: string[]): string {
  const at = /[?&]variables=([^&#]*)/.exec(search);
  if (at === null) return search;
  const params = new URLSearchParams(search.replace(/#.*/, '').slice(1));
  const variables = params.get('variables') ?? '';
  const redacted = (redactValue({ query: params.get('query') ?? '', variables }, keys) as { variables: string }).variables;
  if (redacted === variables) return search;
  return search.slice(0, at.index) + search[at.index] + 'variables=' + encodeURIComponent(redacted) + search.slice(at.index + at[0].length);
}

/** A parsed query string as it may be stored: see redactUrl. */
export function redactQuery(query: unknown, keys: string[]): unknown {
  const out = redactValue(query, keys);
  if (out === null || typeof out !== 'object' || Array.isArray(out)) return out;
  for (const name of Object.keys(out)) if (/^(key|code)$/i.test(name) && (out as Record<string, unknown>)[name] != null) (out as Record<string, unknown>)[name] = hide((out as Record<string, unknown>)[name]);
  return out;
}

/** Whether a header's whole value (or all but its scheme) is redacted: a credential header, or one named like a secret. */
export const isSecretHeader = (n: string, keys: string[]): boolean =>
  SECRET_HEADERS.has(n) || (isSecretKey(n, keys) && !PUBLIC_HEADERS.has(n) && n !== 'cookie' && n !== 'set-cookie');

function redactHeader(n: string, value: unknown, keys: string[]): unknown {
  if (n === 'set-cookie') return (Array.isArray(value) ? value : [value]).map((v) => redactSetCookie(String(v)));
  if (Array.isArray(value) && !isSecretHeader(n, keys) && n !== 'cookie') return value.map((v) => redactParameters(String(v), keys));
  return redactHeaderValue(n, String(value), keys);
}

/** One value of header `n` (its name in lower case) as it may be stored: see redactHeaders. */
export function redactHeaderValue(n: string, value: string, keys: string[]): string {
  if (SECRET_HEADERS.has(n)) return redactCredentials(n, value);
  if (n === 'cookie') return redactCookieHeader(value);
  if (n === 'set-cookie') return redactSetCookie(value);
  if (isSecretKey(n, keys) && !PUBLIC_HEADERS.has(n)) return hide(value);
  return redactParameters(value, keys);
}

/** A header value carries a secret as a parameter (`?token=`, `url=…?secret=`, a Referer's `?code=`), if at all: one without `=` is left as it is. */
const redactParameters = (value: string, keys: string[]) => (value.includes('=') ? redactUrl(value, keys) : value);

const redactCredentials = (name: string, value: string) => {
  const scheme = /^([A-Za-z][\w-]*)\s+\S/.exec(value);
  const keep = scheme && name.endsWith('authorization') && AUTH_SCHEMES.test(scheme[1]);
  if (scheme) noteHidden(value.slice(scheme[1].length).trim());
  return keep ? `${scheme[1]} ${REDACTED}` : hide(value);
};

export const redactCookieHeader = (value: string): string =>
  value.split(';').map((pair) => {
    const eq = pair.indexOf('=');
    return eq < 0 ? pair : `${pair.slice(0, eq)}=${hideCookie(pair.slice(eq + 1))}`;
  }).join(';');

/** A cookie's value hidden as it is sent, unquoted, decoded, and (a signed session's) by its id. */
function hideCookie(raw: string): string {
  const value = raw.trim().replace(/^"(.*)"$/, '$1');
  const decoded = decodeName(value);
  for (const v of decoded === value ? [value] : [value, decoded]) {
    noteHidden(v);
    const signed = /^s:([^.]+)\./.exec(v);
    if (signed) noteHidden(signed[1]);
  }
  return REDACTED;
}

const redactSetCookie = (value: string) => {
  const semi = value.indexOf(';');
  const first = semi < 0 ? value : value.slice(0, semi);
  const eq = first.indexOf('=');
  const named = eq < 0 ? hide(first) : `${first.slice(0, eq)}=${hideCookie(first.slice(eq + 1))}`;
  return semi < 0 ? named : named + value.slice(semi);
};

/** Cookie names from a Cookie header; their values are never kept. */
export function cookieNames(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!header) return out;
  for (const pair of header.split(';')) {
    const eq = pair.indexOf('=');
    const name = (eq < 0 ? pair : pair.slice(0, eq)).trim();
    if (name) setOwn(out, name, REDACTED);
  }
  return out;
}
