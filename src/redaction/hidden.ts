import { setOwn } from '../recording/plain.js';

/**
 * Hidden once, hidden everywhere. Every place that redacts a value notes it here while a record
 * is made (hide(), noteHidden()); the row is then sealed (sealedRow() in record.ts): no string of
 * the stored row, whichever panel, field or library put it there, keeps a value that was hidden
 * anywhere in it. This is the one gate every stored value passes, so a new kind of data cannot go
 * around it.
 */

export const REDACTED = '[redacted]';

/** Shorter values are too likely to be something else (a flag, a small id) to cut from text. */
const SHORTEST = 4;
/** From this length a hidden value is cut out of any text that holds it; shorter, only a string that is all of it goes. */
const CUT_FROM = 8;
/** No secret is this long: a longer hidden value is data (a cached page), which is not cut from elsewhere. */
const LONGEST = 4096;
/** A bound on the values one record keeps track of. */
const MOST = 500;
/** Values a redaction may hide (under a secret-named key) that are words of every text. */
const COMMON = new Set(['true', 'false', 'null', 'undefined', 'none', 'yes', 'no', REDACTED, '[object Object]']);

let collecting: Set<string> | undefined;
/** What the record being made shows whatever a key says of it: its own token (a `token` field of the profiler's problem+json). */
let shownAnyway: (string | null | undefined)[] = [];

/** Note `value` as hidden in the record being made (if one is), and give what stands in its place. */
export function hide(value: unknown, instead: string = REDACTED): string {
  if (collecting !== undefined && typeof value === 'string') {
    if (shownAnyway.includes(value)) return value;
    noteHidden(value);
  }
  return instead;
}

/** Note `value` as hidden in the record being made, if one is: a value a panel shows as `?`, a cookie's. */
export function noteHidden(value: string): void {
  const set = collecting;
  if (set === undefined || value.length < SHORTEST || value.length > LONGEST || set.size >= MOST) return;
  const trimmed = value.trim();
  if (trimmed.length < SHORTEST || COMMON.has(trimmed.toLowerCase()) || trimmed.includes(REDACTED)) return;
  set.add(trimmed);
}

/** 20 or more characters of a token's alphabet, letters and digits both: an API key, a session id, a reset code. */
const TOKEN = /^(?=[^\s]*[A-Za-z])(?=[^\s]*\d)[A-Za-z0-9+/_\-=.~:]{20,}$/;
export const looksLikeToken = (value: unknown): boolean => typeof value === 'string' && TOKEN.test(value);

/**
 * A value a panel leaves out as data, not as a secret (a Redis value shows as `?`, as the clients'
 * own tracing has it): hidden everywhere only when it is shaped like a credential. A job's failure
 * message, a cached name, are the data other panels are there to show.
 */
export function hideData(value: unknown, instead: string): string {
  if (looksLikeToken(value)) noteHidden(value as string);
  return instead;
}

/**
 * Run `make` (a record's redaction) noting what it hides. `shown` are values the record shows
 * whatever a redaction made of them (its own token: a body's `token` field may repeat it).
 */
export function noting<T>(make: () => T, shown: (string | null | undefined)[] = []): { made: T; hidden: HiddenValues } {
  const [outer, outerShown] = [collecting, shownAnyway];
  const set = new Set<string>();
  collecting = set;
  shownAnyway = shown;
  try {
    const made = make();
    for (const value of shown) if (value) set.delete(value);
    return { made, hidden: new HiddenValues(set) };
  } finally {
    collecting = outer;
    shownAnyway = outerShown;
  }
}

/** The values one record hid, and how to cut them from any of its strings. */
export class HiddenValues {
  /** What is cut from within a text (longest first, so a secret that holds another goes whole). */
  private readonly inner: string[] = [];
  /** What is hidden only as a whole string. */
  private readonly whole = new Set<string>();

  constructor(values: Iterable<string>) {
    const inner = new Set<string>();
    for (const value of values) {
      for (const form of formsOf(value)) {
        if (form.length >= CUT_FROM) inner.add(form);
        else if (form.length >= SHORTEST) this.whole.add(form);
      }
    }
    this.inner = [...inner].sort((a, b) => b.length - a.length);
  }

  get size(): number {
    return this.inner.length + this.whole.size;
  }

  /** `text` with every hidden value cut out of it, the rest kept. */
  cut(text: string): string {
    if (this.whole.has(text)) return REDACTED;
    for (const value of this.inner) if (text.includes(value)) text = text.split(value).join(REDACTED);
    return text;
  }

  /** Whether JSON text (a serialised record) holds a string that cut() would change. */
  inJson(json: string): boolean {
    for (const value of this.inner) if (json.includes(jsonInner(value))) return true;
    for (const value of this.whole) if (json.includes(`"${jsonInner(value)}"`)) return true;
    return false;
  }

  /** A parsed JSON value with every string (keys too) cut: see cut(). */
  sealValue(value: unknown): unknown {
    if (typeof value === 'string') return this.cut(value);
    if (value === null || typeof value !== 'object') return value;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) value[i] = this.sealValue(value[i]);
      return value;
    }
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value)) setOwn(out, this.cut(key), this.sealValue((value as Record<string, unknown>)[key]));
    return out;
  }

  /** JSON text with every hidden value cut from its strings: parsed and written again only when it holds one. */
  sealJson(json: string): string {
    return this.size === 0 || !this.inJson(json) ? json : JSON.stringify(this.sealValue(JSON.parse(json)));
  }
}

/** JSON.stringify(value) without its quotes: how a string stands in JSON text. */
const jsonInner = (value: string): string => {
  const json = JSON.stringify(value);
  return json.slice(1, -1);
};

/**
 * The ways a value is written where a record keeps it: as it is, as JSON text inside a string
 * (a body kept as text), percent-encoded (a URL's query, a form).
 */
function formsOf(value: string): string[] {
  const forms = [value];
  const escaped = jsonInner(value);
  if (escaped !== value) forms.push(escaped);
  let encoded: string | undefined;
  try {
    encoded = encodeURIComponent(value);
  } catch {
    // A lone surrogate: no encoded form.
  }
  if (encoded !== undefined && encoded !== value) forms.push(encoded, encoded.replace(/%20/g, '+'));
  return forms;
}
