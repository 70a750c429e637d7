/**
 * Which tokens are taken, as one bit per 24-bit prefix (the first six hex characters): 2 MiB for
 * the whole 6-character space, checked in a few nanoseconds where a SQLite lookup took
 * microseconds on every request. A set bit is conservative: a longer token that only shares its
 * prefix is redrawn too, which costs nothing but a draw.
 *
 * The bits live in a SharedArrayBuffer: the request thread marks the tokens it draws, the writer
 * thread those it finds stored by other processes and clears those pruned. Atomics keep the two
 * from undoing each other's change to the same byte.
 */
export class TokenBitmap {
  private readonly bits: Uint8Array;

  constructor(readonly buffer: SharedArrayBuffer = new SharedArrayBuffer(1 << 21)) {
    this.bits = new Uint8Array(buffer);
  }

  private static slot(token: string): number {
    return Number.parseInt(token.slice(0, 6), 16);
  }

  has(token: string): boolean {
    const s = TokenBitmap.slot(token);
    return (this.bits[s >>> 3] & (1 << (s & 7))) !== 0;
  }

  add(token: string): void {
    const s = TokenBitmap.slot(token);
    Atomics.or(this.bits, s >>> 3, 1 << (s & 7));
  }

  /** Forget every token (a new slot of a shared store starts from what is stored under it). */
  clear(): void {
    this.bits.fill(0);
  }

  delete(token: string): void {
    const s = TokenBitmap.slot(token);
    Atomics.and(this.bits, s >>> 3, ~(1 << (s & 7)) & 0xff);
  }
}
