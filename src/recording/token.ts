import { random } from 'nanoid';

export const TOKEN_PATTERN = /^[0-9a-f]{6,32}$/;

export const isToken = (value: unknown): value is string => typeof value === 'string' && TOKEN_PATTERN.test(value);

/**
 * A profile's link another server sent (X-Debug-Token-Link, X-Debug-Parent-Link), when it is a
 * plain http(s) URL to that token's profile on a host the profiler knows (`known`: loopback, the
 * allowedHosts and linkHosts options, the host the page is read on): anything else, which any
 * client or called service could have sent, is not shown as a link.
 */
export function profileLink(link: unknown, token: string | null | undefined, known: (hostname: string) => boolean): string | undefined {
  if (typeof link !== 'string' || !isToken(token)) return undefined;
  try {
    const url = new URL(link);
    const plain = (url.protocol === 'http:' || url.protocol === 'https:') && url.pathname.endsWith(`/_profiler/${token}`) && url.username === '' && url.password === '';
    return plain && known(url.hostname.toLowerCase()) ? url.href : undefined;
  } catch {
    return undefined;
  }
}

/** Random hex characters are drawn this many at a time (nanoid's pooled CSPRNG, which refills 128 draws at once) and dealt out in slices. */
const HEX_BATCH = 512;

type Taken = { has(token: string): boolean; add(token: string): void };

/** `n` random hex characters at a time, from a batch drawn at once. */
function hexDrawer(): (n: number) => string {
  let hex = '';
  let at = 0;
  return (n) => {
    if (at + n > hex.length) {
      hex = Buffer.from(random(HEX_BATCH / 2)).toString('hex');
      at = 0;
    }
    return hex.slice(at, (at += n));
  };
}

/**
 * Draws tokens that are not taken, and takes them. 16^6 tokens meet the birthday bound after a
 * few thousand requests, so every draw is checked against the tokens in flight and stored, and
 * redrawn on a hit. After many hits in a row (a nearly full space) the token grows by one
 * character rather than loop forever.
 */
export function tokenSource(length: number, taken: Taken): () => string {
  const draw = hexDrawer();
  return () => {
    let n = length;
    for (let attempt = 0; ; attempt++) {
      const token = draw(n);
      if (!taken.has(token)) {
        taken.add(token);
        return token;
      }
      if (attempt % 16 === 15 && n < 32) n++;
    }
  };
}

/** How many processes writing one SQLite file draw tokens no other can draw: one lane each. */
export const LANES = 16;
/** A lane cell's value while the file is not open yet: the writer thread has not taken a lane. */
export const LANE_UNKNOWN = -1;
/** Of a token's first six characters (24 bits), this many are random within its lane: 1,048,576 a lane. */
const LANE_BITS = 20;

/**
 * A bijection of 24 bits (xor-shifts and multiplications by odd numbers, modulo 2^24): a lane's
 * prefixes spread over the whole space, so tokens look no different, and two lanes share none.
 */
const spread = (x: number): number => {
  x ^= x >>> 12;
  x = Math.imul(x, 0x2c1b3d) & 0xffffff;
  x ^= x >>> 11;
  x = Math.imul(x, 0x9e3779) & 0xffffff;
  return x ^ (x >>> 12);
};

/**
 * Tokens for a SQLite file, which several processes may write at once (a cluster, a second
 * server started on the same file): each bitmap knows only what its process drew and what is
 * stored, so two processes could draw the same token within the milliseconds before either is
 * stored. The writer thread takes a lane in the file for its process (`lane`, see SqliteSink):
 * a token's first six characters are then its lane and 20 random bits, spread, and no process
 * draws under another's lane. Before the lane is known (the first moments after start) tokens
 * come from the whole space, checked against the bitmap; when every lane is held by a live
 * process, or this lane is nearly full (or let go), they are long ones: 20 random characters (80
 bits), or `length` if more.
 */
export function laneTokenSource(length: number, taken: Taken, lane: Int32Array): () => string {
  const whole = tokenSource(length, taken);
  const long = tokenSource(longLength(length), taken);
  const draw = hexDrawer();
  return () => {
    const held = Atomics.load(lane, 0);
    if (held === LANE_UNKNOWN) return whole();
    if (held >= LANES) return long();
    for (let attempt = 0; attempt < 64; attempt++) {
      const hex = draw(length);
      const prefix = spread((held << LANE_BITS) | (Number.parseInt(hex.slice(0, 6), 16) & ((1 << LANE_BITS) - 1)));
      const token = prefix.toString(16).padStart(6, '0') + hex.slice(6);
      if (!taken.has(token)) {
        taken.add(token);
        return token;
      }
    }
    return long();
  };
}

/** A shared store's slot, as the first characters of its instance's tokens. */
export const SLOT_CHARS = 4;
export const slotPrefix = (slot: number): string => slot.toString(16).padStart(SLOT_CHARS, '0');

/** Tokens drawn before a shared store's slot is known: long enough (80 bits) that no two meet. */
export const PROVISIONAL_LENGTH = 20;

/** How long such tokens are for a `tokenLength`: never shorter than it. */
export const longLength = (length: number): number => Math.max(length, PROVISIONAL_LENGTH);

/**
 * Tokens for a shared (PostgreSQL) store: the instance's slot as four hex characters, then
 * `length` random ones drawn against the slot's taken bitmap. The slot comes from the writer
 * thread through `slot` (-1 while it is not known yet, at start or with the database down): then
 * the token is 20 random characters (80 bits: no two meet in practice, and a stored one is
 * never overwritten whatever happens).
 */
export function sharedTokenSource(length: number, taken: Taken, slot: Int32Array): () => string {
  const own = tokenSource(Math.min(length, 28), taken);
  const provisional = tokenSource(longLength(length), { has: () => false, add: () => {} });
  let held = -1;
  let prefix = '';
  return () => {
    const s = Atomics.load(slot, 0);
    if (s < 0) return provisional();
    if (s !== held) {
      held = s;
      prefix = slotPrefix(s);
    }
    return prefix + own();
  };
}
