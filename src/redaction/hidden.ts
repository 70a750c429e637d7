import { setOwn } from '../recording/plain.js';
import { ANCHOR, SecretIndex, type Found } from './secret-index.js';

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
/** No secret is this long: a longer hidden value is data (a cached page), which is not cut from elsewhere. */
const LONGEST = 4096;
/** How many hidden values the process keeps (their forms), and so cuts from the records after the one that hid them. */
const REMEMBERED = 10_000;
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

/**
 * Note `value` as hidden in the record being made, if one is: a value a panel shows as `?`, a
 * cookie's. However many a request brings (a client may send thousands), each is noted: a cap
 * would let a client's values crowd out a secret the app hides.
 */
export function noteHidden(value: string): void {
  const set = collecting;
  if (set === undefined || value.length < SHORTEST || value.length > LONGEST) return;
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
 * whatever a redaction made of them (its own token: a body's `token` field may repeat it); `keys`
 * the secret names, which a value may be (`"password": "password"`) without being cut from the
 * records after it, where they name every such field.
 */
export function noting<T>(make: () => T, shown: (string | null | undefined)[] = [], keys: string[] = []): { made: T; hidden: HiddenValues } {
  const [outer, outerShown] = [collecting, shownAnyway];
  const set = new Set<string>();
  collecting = set;
  shownAnyway = shown;
  try {
    const made = make();
    for (const value of shown) if (value) set.delete(value);
    return { made, hidden: remembered.record(set, keys) };
  } finally {
    collecting = outer;
    shownAnyway = outerShown;
  }
}

/**
 * The values hidden in the records this process made, the most recent REMEMBERED of them, in
 * memory only (never stored), each with the forms it is written in (formsOf). A credential (a
 * token-shaped value: an API key, a session id) hidden in one record is cut from every record
 * after it (an API key a request made, in a later request's cache key); any other value only from
 * its own record: a client sends what it likes as a cookie, and must not choose what every later
 * profile loses (`rawHeaders`, `text/html`).
 */
class Remembered {
  /** Each value's forms, oldest first: seen again, a value is found with them. */
  private readonly values = new Map<string, Forms>();
  /** How many remembered credentials hold each form: two may share one. */
  private readonly forms = new Map<string, number>();
  readonly text = new SecretIndex();
  readonly json = new SecretIndex();
  /** How many remembered values are cut from later records. */
  private indexed = 0;

  /**
   * The record's hidden values, and what cuts them (and the credentials remembered) from its
   * strings. The oldest beyond REMEMBERED go first, never the record's own: it is sealed with them all.
   */
  record(values: Set<string>, keys: string[]): HiddenValues {
    for (let over = this.values.size + values.size - REMEMBERED; over > 0; over--) {
      const [oldest] = this.values.keys();
      if (oldest === undefined || values.has(oldest)) break;
      this.forget(oldest);
    }
    let whole: Forms['whole'] | undefined;
    let own: OwnIndex | undefined;
    for (const value of values) {
      let forms = this.values.get(value);
      if (forms !== undefined) {
        // Seen again: the most recent now.
        this.values.delete(value);
        this.values.set(value, forms);
      } else {
        forms = formsOfValue(value, looksLikeToken(value) && !keys.includes(value.toLowerCase()));
        this.values.set(value, forms);
        if (forms.remembered) this.index(forms.long, 1);
      }
      if (forms.whole.length > 0) (whole ??= []).push(...forms.whole);
      if (!forms.remembered && forms.long.length > 0) {
        // Cut from this record only.
        own ??= { text: new SecretIndex(), json: new SecretIndex() };
        for (const form of forms.long) {
          own.text.add(form);
          own.json.add(jsonInner(form));
        }
      }
    }
    return new HiddenValues(whole ?? [], this, own);
  }

  get size(): number {
    return this.indexed;
  }

  private index(forms: string[], by: 1 | -1): void {
    if (forms.length > 0) this.indexed += by;
    for (const form of forms) {
      const held = (this.forms.get(form) ?? 0) + by;
      if (held > 0) this.forms.set(form, held);
      else this.forms.delete(form);
      if (by > 0 ? held > 1 : held > 0) continue;
      if (by > 0) {
        this.text.add(form);
        this.json.add(jsonInner(form));
      } else {
        this.text.delete(form);
        this.json.delete(jsonInner(form));
      }
    }
  }

  private forget(value: string): void {
    const forms = this.values.get(value);
    this.values.delete(value);
    if (forms?.remembered) this.index(forms.long, -1);
  }
}

/** A hidden value as the gate looks for it: see formsOf. */
interface Forms {
  /** Its forms of ANCHOR characters and more, cut from within any text. */
  long: string[];
  /** Its shorter forms, each as a text is all of it and as JSON text has that string (quoted). */
  whole: { text: string; json: string }[];
  /** A credential, cut from the records after its own too. */
  remembered: boolean;
}

/** A record's own values, cut from it alone: as they stand in a text, and in JSON text. */
interface OwnIndex {
  text: SecretIndex;
  json: SecretIndex;
}

function formsOfValue(value: string, remembered: boolean): Forms {
  const forms = formsOf(value);
  return {
    long: forms.filter((form) => form.length >= ANCHOR),
    whole: forms.filter((form) => form.length < ANCHOR).map((form) => ({ text: form, json: `"${jsonInner(form)}"` })),
    remembered,
  };
}

const remembered = new Remembered();

/** The values one record hid (and those the records before it did), and how to cut them from any of its strings. */
export class HiddenValues {
  /** What is hidden only as a whole string: values too short to cut from within a text. */
  private readonly whole: Set<string>;

  constructor(
    private readonly short: Forms['whole'],
    private readonly remembered: Remembered,
    /** This record's own, not remembered. */
    private readonly own: OwnIndex | undefined,
  ) {
    this.whole = new Set(short.map((form) => form.text));
  }

  get size(): number {
    return this.whole.size + this.remembered.size + (this.own?.text.size ?? 0);
  }

  /**
   * `text` with every hidden value cut out of it (the longest where several start together), and
   * the head of one that a bound cut short where it ends the text; the rest kept.
   */
  cut(text: string): string {
    if (this.whole.has(text)) return REDACTED;
    text = cutFound(text, this.remembered.text.find(text, true));
    return this.own === undefined ? text : cutFound(text, this.own.text.find(text, true));
  }

  /** Whether JSON text (a serialised record) holds a string that cut() would change. */
  inJson(json: string): boolean {
    const QUOTE = 0x22;
    if (this.remembered.json.in(json, true, QUOTE)) return true;
    if (this.own !== undefined && this.own.json.in(json, true, QUOTE)) return true;
    for (const form of this.short) if (json.includes(form.json)) return true;
    return false;
  }

  /**
   * A key with every credential cut out of it (an id as a key, `sess:<id>`): only those. A key is
   * also the record's own structure (`rawHeaders`, `text`), which a client's cookie must not be
   * able to take apart; a credential is no word of it (20 or more letters and digits).
   */
  cutKey(key: string): string {
    return cutFound(key, this.remembered.text.find(key, false));
  }

  /** A parsed JSON value with every string cut (see cut()), and every key (see cutKey()). */
  sealValue(value: unknown): unknown {
    if (typeof value === 'string') return this.cut(value);
    if (value === null || typeof value !== 'object') return value;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) value[i] = this.sealValue(value[i]);
      return value;
    }
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value)) setOwn(out, this.cutKey(key), this.sealValue((value as Record<string, unknown>)[key]));
    return out;
  }

  /** JSON text with every hidden value cut from its strings: one scan, and parsed and written again only when it holds one. */
  sealJson(json: string): string {
    return this.size === 0 || !this.inJson(json) ? json : JSON.stringify(this.sealValue(JSON.parse(json)));
  }
}

function cutFound(text: string, found: Found[]): string {
  if (found.length === 0) return text;
  let out = '';
  let from = 0;
  for (const f of found) {
    out += text.slice(from, f.start) + REDACTED;
    from = f.end;
  }
  return out + text.slice(from);
}

/** JSON.stringify(value) without its quotes: how a string stands in JSON text. */
const jsonInner = (value: string): string => {
  const json = JSON.stringify(value);
  return json.slice(1, -1);
};

/** `%2F` as `%2f`: percent escapes in the other case, as some encoders write them. */
const lowerEscapes = (encoded: string): string => encoded.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase());

/**
 * The ways a value is written where a record keeps it: as it is, as JSON text inside a string (a
 * body kept as text), percent-encoded as encodeURIComponent and encodeURI write it, form-encoded
 * (a space as `+`, `!` as `%21`), each escape in upper or lower case.
 */
function formsOf(value: string): string[] {
  const forms = new Set([value, jsonInner(value)]);
  let encoded: string[] = [];
  try {
    encoded = [encodeURIComponent(value), encodeURI(value), new URLSearchParams([['', value]]).toString().slice(1)];
  } catch {
    // A lone surrogate: no encoded form.
  }
  for (const form of encoded) {
    forms.add(form);
    forms.add(form.replace(/%20/g, '+'));
    forms.add(lowerEscapes(form));
  }
  return [...forms];
}
