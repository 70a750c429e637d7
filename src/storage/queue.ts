import { serialise, type Profile, type StoredProfile } from './profile.js';
import { StoreHandle } from './store-handle.js';
import { isCorruption, ProfileStore } from './store.js';
import type { TokenBitmap } from './token-bitmap.js';

export interface QueueOptions {
  database: string;
  maxProfiles: number;
  maxAge: number;
  flushInterval: number;
}

/** Most profiles, and most bytes of them, waiting for a store that cannot take them (locked, missing, full); beyond either the oldest go, counted. */
const MAX_WAITING = 20_000;
const MAX_WAITING_BYTES = 48 * 1024 * 1024;
const RETRY_AFTER_MS = 2_000;
const BATCH = 1_000;
/** Age pruning scans by time: once a second is plenty. Count pruning is checked on every write. */
const AGE_PRUNE_EVERY_MS = 1_000;

/**
 * Batches finished requests and writes them in one transaction per flush. Storage trouble never
 * reaches the app: it is told once, the batch waits, and writing resumes when the store can take
 * it again.
 */
export class WriteQueue<T> {
  private pending: T[] = [];
  private built: StoredProfile[] = [];
  private builtBytes = 0;
  private lastSeenId = 0;
  private nextAgePrune = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly handle: StoreHandle;
  private dropped = 0;
  private closed = false;
  private morePrune = false;
  /** The troubles told in this episode: each is said once, however they alternate, and the episode's end is said too. */
  private troubles = new Set<string>();

  constructor(
    private readonly options: QueueOptions,
    /** Tokens waiting or stored, ours and other processes': what a new token must not be. */
    private readonly taken: TokenBitmap,
    private readonly build: (item: T) => Profile,
    private readonly onError: (message: string) => void,
    /** Told of bytes entering (positive) and leaving (negative) what waits: items as they are weighed, profiles as they are serialised. */
    private readonly account: (bytes: number) => void = () => {},
    private readonly weigh: (item: T) => number = () => 0,
  ) {
    // The writer thread may wait for a lock (another process's writes, a migration at start): no request waits with it.
    this.handle = new StoreHandle(options.database, (m) => this.tell(m), (store) => {
      this.lastSeenId = 0;
      this.learnTokens(store);
    }, 2_000);
    this.handle.get();
  }

  private tell(message: string): void {
    // "dropped so far" counts change: the first such line of an episode stands for the others.
    const key = message.replace(/\d+/g, '#');
    if (this.troubles.has(key)) return;
    this.troubles.add(key);
    this.onError(message);
  }


  /** The store, opened on demand; undefined while it cannot be opened. */
  open(now = false): ProfileStore | undefined {
    return this.handle.get(now);
  }

  /** Mark the tokens written since we last looked, including other processes' into the same file. */
  private learnTokens(store: ProfileStore): void {
    for (const { id, token } of store.tokensAfter(this.lastSeenId)) {
      this.taken.add(token);
      this.lastSeenId = id;
    }
  }

  push(items: T[]): void {
    if (this.closed) return;
    for (const item of items) this.pending.push(item);
    this.schedule(this.pending.length >= BATCH ? 0 : this.options.flushInterval);
  }

  private schedule(delay: number): void {
    if (this.timer && delay > 0) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush();
    }, delay);
    this.timer.unref();
  }

  /**
   * Write everything that waits. Synchronous; returns the number of profiles written. `now` (an
   * explicit flush()) tries a store that could not be opened at once, not after the pause.
   */
  flush(now = false): number {
    const changed = this.handle.changed();
    if (changed) {
      this.tell(changed === 'deleted'
        ? `profiler storage ${this.options.database} was deleted; starting a new file`
        : `profiler storage ${this.options.database} was replaced; reopening it`);
    }
    const items = this.pending;
    this.pending = [];
    for (const item of items) {
      const row = serialise(this.build(item));
      this.account(row.data.length - this.weigh(item));
      this.built.push(row);
      this.builtBytes += row.data.length;
    }
    let over = 0;
    while (this.built.length - over > MAX_WAITING || (this.builtBytes > MAX_WAITING_BYTES && over < this.built.length)) {
      this.builtBytes -= this.built[over].data.length;
      over++;
    }
    if (over > 0) {
      const gone = this.built.splice(0, over);
      for (const row of gone) {
        this.taken.delete(row.summary.token);
        this.account(-row.data.length);
      }
      this.dropped += over;
      this.tell(`profiler storage is behind: ${this.dropped} profiles dropped so far`);
    }
    const store = this.built.length > 0 || this.morePrune ? this.open(now) : undefined;
    if (this.built.length === 0) {
      if (store) this.prune(store);
      return 0;
    }
    if (!store) return this.retryLater();
    const batch = this.built;
    try {
      store.insertSerialised(batch);
    } catch (err) {
      this.storageFailed(store, err);
      return this.retryLater();
    }
    this.built = [];
    this.account(-this.builtBytes);
    this.builtBytes = 0;
    if (this.troubles.size > 0) {
      this.troubles.clear();
      this.onError(`profiler storage is writable again: ${batch.length} waiting profiles written`);
    }
    try {
      this.learnTokens(store);
    } catch {
      // Only a missed refresh: the next write catches up.
    }
    this.prune(store);
    return batch.length;
  }

  private retryLater(): number {
    if (!this.closed) this.schedule(RETRY_AFTER_MS);
    return 0;
  }

  private prune(store: ProfileStore): void {
    try {
      const now = Date.now();
      const byAge = now >= this.nextAgePrune;
      if (byAge) this.nextAgePrune = now + AGE_PRUNE_EVERY_MS;
      const gone = store.prune(this.options.maxProfiles, byAge ? this.options.maxAge : undefined, now);
      for (const token of gone) this.taken.delete(token);
      // Something went: there may be more, so another bounded step soon, never one long delete.
      this.morePrune = gone.length > 0;
      if (this.morePrune) {
        this.nextAgePrune = 0;
        this.schedule(this.options.flushInterval);
      }
    } catch (err) {
      this.storageFailed(store, err);
    }
  }

  private storageFailed(store: ProfileStore, err: unknown): void {
    const code = String((err as { code?: unknown }).code ?? '');
    if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) {
      this.tell('profiler storage is locked by another process; profiles wait and will be written');
      return;
    }
    this.tell(`profiler storage failed (${code || (err as Error).message}); profiles wait and will be written`);
    this.handle.drop();
    if (isCorruption(err) && store.file !== ':memory:') {
      try {
        const aside = ProfileStore.moveAside(store.file);
        this.tell(`profiler storage was corrupt: moved to ${aside}, starting a new file`);
      } catch {
        // Could not move it; the next open reports why.
      }
    }
  }

  close(): void {
    clearTimeout(this.timer);
    this.flush();
    this.closed = true;
    this.handle.close();
  }
}
