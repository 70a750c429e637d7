import { randomUUID } from 'node:crypto';
import { PgProfileStore } from './pg-store.js';
import { WaitingSums } from './insight-sums.js';
import type { StoredProfile } from './profile.js';
import type { ProfileSink } from './sink.js';
import type { TokenBitmap } from './token-bitmap.js';
import { SLOT_CHARS, slotPrefix } from '../recording/token.js';

/** A slot is touched this often while its instance runs, and may be taken by another once not touched for STALE_MS. */
const TOUCH_EVERY_MS = 30_000;
const STALE_MS = 10 * 60_000;

/**
 * A shared PostgreSQL store. This instance holds a token slot, published to the request thread
 * through `slotCell` (-1 until it is known): tokens are the slot's four hex characters, then
 * random ones checked against the bitmap, which holds the random parts stored under that slot.
 * No other live instance draws under the same slot, so no token can be another instance's.
 */
export class PgSink implements ProfileSink {
  readonly pruneEveryMs = 1_000;
  private readonly store: PgProfileStore;
  private readonly owner = randomUUID();
  private slot = -1;
  /** When the slot was last taken or touched. */
  private touched = 0;
  private taking: Promise<boolean> | undefined;
  private readonly toucher: NodeJS.Timeout;
  private readonly instance: string;
  private readonly sums = new WaitingSums();

  constructor(
    options: { url: string; schema: string; instance: string },
    private readonly taken: TokenBitmap,
    private readonly slotCell: Int32Array,
    private readonly tell: (message: string) => void,
  ) {
    this.store = new PgProfileStore({ url: options.url, schema: options.schema, max: 2 });
    this.instance = options.instance;
    this.toucher = setInterval(() => void this.touch(), TOUCH_EVERY_MS).unref();
    void this.open();
  }

  open(): Promise<boolean> | boolean {
    if (this.slot >= 0) return true;
    return (this.taking ??= this.takeSlot().finally(() => {
      this.taking = undefined;
    }));
  }

  private async takeSlot(): Promise<boolean> {
    Atomics.store(this.slotCell, 0, -1);
    try {
      const slot = await this.store.takeSlot(this.owner, this.instance, STALE_MS);
      const prefix = slotPrefix(slot);
      const stored = await this.store.tokensWithPrefix(prefix);
      // The slot's earlier holder may have left profiles: their tokens are taken before the first draw.
      this.taken.clear();
      for (const token of stored) this.taken.add(token.slice(SLOT_CHARS));
      this.slot = slot;
      this.touched = Date.now();
      Atomics.store(this.slotCell, 0, slot);
      return true;
    } catch (err) {
      this.tell(`profiler storage cannot be opened (${(err as Error).message}); requests are served, profiles wait in memory`);
      return false;
    }
  }

  /**
   * Keep the slot; one another instance took while we could not reach the database is given up for
   * a new one. A slot not touched for half the time after which others may take it is let go:
   * tokens are long ones until the next write takes a slot again.
   */
  private async touch(): Promise<void> {
    if (this.slot < 0) return;
    try {
      if (await this.store.touchSlot(this.slot, this.owner)) {
        this.touched = Date.now();
        return;
      }
      this.tell(`profiler token slot ${slotPrefix(this.slot)} was taken by another instance while this one was away; taking a new one`);
      this.slot = -1;
      await this.open();
    } catch {
      // Unreachable now: the next touch, or the next write, finds out.
      if (Date.now() - this.touched <= STALE_MS / 2) return;
      this.slot = -1;
      Atomics.store(this.slotCell, 0, -1);
    }
  }

  changed(): undefined {
    return undefined;
  }

  async write(rows: StoredProfile[], now: boolean): Promise<void> {
    const sums = this.sums.forTransaction(now);
    await this.store.insert(rows, sums.add);
    sums.committed();
  }

  sumsDueIn(): number | undefined {
    return this.sums.dueIn();
  }

  /**
   * Pruned tokens stay taken too: a slot's bits are only ever set while its holder runs (at worst
   * its tokens grow a character after millions of requests), and a bit is never cleared for a
   * token that might still be stored.
   */
  async prune(maxProfiles: number, maxAge: number | undefined, now: number): Promise<number | undefined> {
    return (await this.store.prune(maxProfiles, maxAge, now))?.length;
  }

  failed(err: unknown): string[] {
    return [`profiler storage failed (${(err as Error)?.message ?? err}); profiles wait and will be written`];
  }

  async close(): Promise<void> {
    clearInterval(this.toucher);
    await this.store.close();
  }
}
