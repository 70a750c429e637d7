/**
 * Which tokens are taken, as one bit per 24-bit prefix (the first six hex characters): 2 MiB for
 * the whole 6-character space, checked in a few nanoseconds where a SQLite lookup took
 * microseconds on every request. A set bit is conservative: a longer token that only shares its
 * prefix is redrawn too, which costs nothing but a draw.
 */
export class TokenBitmap {
  private readonly bits = new Uint8Array(1 << 21);

  private static slot(token: string): number {
    return Number.parseInt(token.slice(0, 6), 16);
  }

  has(token: string): boolean {
    const s = TokenBitmap.slot(token);
    return (this.bits[s >>> 3] & (1 << (s & 7))) !== 0;
  }

  add(token: string): void {
    const s = TokenBitmap.slot(token);
    this.bits[s >>> 3] |= 1 << (s & 7);
  }

  delete(token: string): void {
    const s = TokenBitmap.slot(token);
    this.bits[s >>> 3] &= ~(1 << (s & 7));
  }
}
