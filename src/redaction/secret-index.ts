/**
 * Many strings looked for in a text in one scan, whatever their number: each is found by its
 * first ANCHOR characters (a rolling hash over the text, a bit table that rules most places out
 * at once), then compared whole. A regular expression of 10,000 alternatives costs 125 ms to
 * build and 25 µs a kilobyte to run; this costs the same few µs a kilobyte for 10 strings or for
 * 10,000, and takes strings in and out one at a time.
 *
 * It also finds a string's head where a text ends with one (ANCHOR characters or more, then the
 * end, or `…` as a text cut at a bound ends): a secret a bound split must not keep its first half.
 */

/** What a string is found by: no shorter one is held. */
export const ANCHOR = 8;
const BASE = 0x01000193;
/** BASE to the power ANCHOR - 1, for taking the char that leaves the window out of the hash. */
const OUTGOING = (() => {
  let p = 1;
  for (let i = 1; i < ANCHOR; i++) p = Math.imul(p, BASE);
  return p;
})();
/** The bit table starts small and grows with what it holds: about 8 slots a string, so that most places of a text are ruled out at once. */
const FIRST_SLOTS = 256;
const SLOTS_A_STRING = 8;
const ELLIPSIS = 0x2026;

/** Where one string was found in a text: [start, end), and whether it is only a head of it. */
export interface Found {
  start: number;
  end: number;
  head: boolean;
}

export class SecretIndex {
  /** By the hash of their first ANCHOR characters. */
  private readonly byAnchor = new Map<number, string[]>();
  /** How many held strings have each slot of the hash (saturating): zero rules a place out. */
  private table = new Uint8Array(FIRST_SLOTS);
  private mask = FIRST_SLOTS - 1;
  private count = 0;

  get size(): number {
    return this.count;
  }

  add(value: string): void {
    if (value.length < ANCHOR) return;
    const hash = hashAt(value, 0);
    const bucket = this.byAnchor.get(hash);
    if (bucket === undefined) this.byAnchor.set(hash, [value]);
    else if (bucket.includes(value)) return;
    else bucket.push(value);
    this.count++;
    if (this.count * SLOTS_A_STRING > this.table.length) this.grow();
    else this.mark(hash);
  }

  private mark(hash: number): void {
    const slot = hash & this.mask;
    if (this.table[slot] < 255) this.table[slot]++;
  }

  /** A table four times as large, filled again from what is held. */
  private grow(): void {
    this.table = new Uint8Array(this.table.length * 4);
    this.mask = this.table.length - 1;
    for (const [hash, bucket] of this.byAnchor) for (let i = 0; i < bucket.length; i++) this.mark(hash);
  }

  delete(value: string): void {
    if (value.length < ANCHOR) return;
    const hash = hashAt(value, 0);
    const bucket = this.byAnchor.get(hash);
    const at = bucket?.indexOf(value) ?? -1;
    if (bucket === undefined || at < 0) return;
    bucket.splice(at, 1);
    if (bucket.length === 0) this.byAnchor.delete(hash);
    const slot = hash & this.mask;
    // A saturated slot stays set: it only costs a lookup that finds nothing.
    if (this.table[slot] < 255) this.table[slot]--;
    this.count--;
  }

  /**
   * Each place of `text` that holds a string of the index (the longest where several start
   * together), left to right and not overlapping; with `heads`, also a head that ends the text.
   * `stop` is a character that ends a text inside `text` (a JSON string's `"`): a head ends there too.
   */
  find(text: string, heads: boolean, stop = -1): Found[] {
    const found: Found[] = [];
    if (this.count === 0 || text.length < ANCHOR) return found;
    const { table, mask } = this;
    let hash = hashAt(text, 0);
    for (let i = 0; ; ) {
      if (table[hash & mask] !== 0) {
        const match = this.matchAt(text, i, hash, heads, stop);
        if (match !== undefined) {
          found.push(match);
          i = match.end;
          if (i + ANCHOR > text.length) break;
          hash = hashAt(text, i);
          continue;
        }
      }
      if (i + ANCHOR >= text.length) break;
      hash = (Math.imul(hash - Math.imul(text.charCodeAt(i), OUTGOING), BASE) + text.charCodeAt(i + ANCHOR)) | 0;
      i++;
    }
    return found;
  }

  /** Whether find() would find anything. */
  in(text: string, heads: boolean, stop = -1): boolean {
    return this.count > 0 && this.find(text, heads, stop).length > 0;
  }

  private matchAt(text: string, i: number, hash: number, heads: boolean, stop: number): Found | undefined {
    const bucket = this.byAnchor.get(hash);
    if (bucket === undefined) return undefined;
    let best: Found | undefined;
    for (const value of bucket) {
      if (best !== undefined && value.length <= best.end - best.start) continue;
      if (text.startsWith(value, i)) best = { start: i, end: i + value.length, head: false };
      else if (heads) {
        // A head: the text (or its string) ends inside the value; kept where it is longer than what was found.
        let j = i;
        while (j < text.length && j - i < value.length && text.charCodeAt(j) === value.charCodeAt(j - i)) j++;
        const next = j < text.length ? text.charCodeAt(j) : -1;
        const ends = next === -1 || next === stop || next === ELLIPSIS || (next === 0x20 && text.charCodeAt(j + 1) === ELLIPSIS);
        if (ends && j - i >= ANCHOR && (best === undefined || j > best.end)) best = { start: i, end: j, head: true };
      }
    }
    return best;
  }
}

function hashAt(text: string, at: number): number {
  let hash = 0;
  for (let i = at; i < at + ANCHOR; i++) hash = (Math.imul(hash, BASE) + text.charCodeAt(i)) | 0;
  return hash;
}
