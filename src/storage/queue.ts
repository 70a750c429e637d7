import type { Profile } from './profile.js';
import { isCorruption, ProfileStore } from './store.js';

export interface QueueOptions {
  database: string;
  maxProfiles: number;
  maxAge: number;
  flushInterval: number;
  onError: (message: string) => void;
}

/** Most profiles waiting for a store that cannot take them (locked, missing, full); beyond it the oldest go, counted. */
const MAX_WAITING = 20_000;
const REOPEN_AFTER_MS = 2_000;
const BATCH = 1_000;

/**
 * Batches finished requests and writes them after the response, in one transaction per flush.
 * Storage trouble never reaches the app: it is told once, the batch waits, and writing resumes
 * when the store can take it again.
 */
export class WriteQueue<T> {
  private pending: T[] = [];
  private built: Profile[] = [];
  private readonly pendingTokens = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private store: ProfileStore | undefined;
  private nextOpen = 0;
  private dropped = 0;
  private closed = false;
  private morePrune = false;

  constructor(
    private readonly options: QueueOptions,
    private readonly tokenOf: (item: T) => string,
    private readonly build: (item: T) => Profile,
  ) {
    this.open();
  }

  /** The store, opened on demand; undefined while it cannot be opened. */
  open(): ProfileStore | undefined {
    if (this.store || this.closed || Date.now() < this.nextOpen) return this.store;
    try {
      this.store = ProfileStore.open(this.options.database);
    } catch (err) {
      this.nextOpen = Date.now() + REOPEN_AFTER_MS;
      this.options.onError(`cannot open profiler storage ${this.options.database}: ${(err as Error).message}; requests are served, profiles wait in memory`);
    }
    return this.store;
  }

  inUse(token: string): boolean {
    if (this.pendingTokens.has(token)) return true;
    try {
      return this.store?.has(token) ?? false;
    } catch {
      return false;
    }
  }

  push(item: T): void {
    if (this.closed) return;
    this.pending.push(item);
    this.pendingTokens.add(this.tokenOf(item));
    if (this.pending.length >= BATCH) this.schedule(0);
    else this.schedule(this.options.flushInterval);
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

  /** Write everything that waits. Synchronous; returns the number of profiles written. */
  flush(): number {
    const items = this.pending;
    this.pending = [];
    for (const item of items) this.built.push(this.build(item));
    if (this.built.length > MAX_WAITING) {
      const over = this.built.length - MAX_WAITING;
      for (const p of this.built.splice(0, over)) this.pendingTokens.delete(p.token);
      this.dropped += over;
      this.options.onError(`profiler storage is behind: ${this.dropped} profiles dropped so far`);
    }
    const store = this.built.length > 0 || this.morePrune ? this.open() : undefined;
    if (this.built.length === 0) {
      if (store) this.prune(store);
      return 0;
    }
    if (!store) return this.retryLater();
    const batch = this.built;
    try {
      store.insert(batch);
    } catch (err) {
      this.storageFailed(store, err);
      return this.retryLater();
    }
    this.built = [];
    for (const p of batch) this.pendingTokens.delete(p.token);
    this.prune(store);
    return batch.length;
  }

  private retryLater(): number {
    if (!this.closed) this.schedule(REOPEN_AFTER_MS);
    return 0;
  }

  private prune(store: ProfileStore): void {
    try {
      // A full chunk means there may be more: another step soon, never one long delete.
      this.morePrune = store.prune(this.options.maxProfiles, this.options.maxAge) > 0;
      if (this.morePrune) this.schedule(this.options.flushInterval);
    } catch (err) {
      this.storageFailed(store, err);
    }
  }

  private storageFailed(store: ProfileStore, err: unknown): void {
    const code = String((err as { code?: unknown }).code ?? '');
    if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) {
      this.options.onError(`profiler storage is locked by another process; profiles wait and will be written`);
      return;
    }
    this.options.onError(`profiler storage failed (${code || (err as Error).message}); profiles wait and will be written`);
    store.close();
    this.store = undefined;
    if (isCorruption(err) && store.file !== ':memory:') {
      try {
        const aside = ProfileStore.moveAside(store.file);
        this.options.onError(`profiler storage was corrupt: moved to ${aside}, starting a new file`);
      } catch {
        // Could not move it; the next open reports why.
      }
    }
  }

  close(): void {
    clearTimeout(this.timer);
    this.flush();
    this.closed = true;
    this.store?.close();
    this.store = undefined;
  }
}
