import { WaitingSums } from './insight-sums.js';
import type { StoredProfile } from './profile.js';
import type { Awaitable } from './reader.js';
import { StoreHandle } from './store-handle.js';
import { sqliteCode } from './sqlite.js';
import { isCorruption, ProfileStore } from './store.js';
import type { TokenBitmap } from './token-bitmap.js';

/**
 * Where the writer thread stores profiles: a SQLite file, or a shared PostgreSQL database. The
 * queue before it (batching, bounds, retries, telling trouble once) is the same for both.
 */
export interface ProfileSink {
  /** How often retention runs at most, in ms, unless the last step found more to do. */
  readonly pruneEveryMs: number;
  /** Something changed under the store since the last write (a file deleted): what to tell. */
  changed(): string | undefined;
  /** Ready to write, opening what it needs first; false while it cannot (it told why). `now` tries at once. */
  open(now: boolean): Awaitable<boolean>;
  /** Store rows (none: only the insights' sums that wait, when due); `now` writes the sums that wait whether due or not. */
  write(rows: StoredProfile[], now: boolean): Awaitable<void>;
  /** Milliseconds until the insights' sums that wait are due, or undefined when none wait. */
  sumsDueIn(): number | undefined;
  /** Profiles dropped unwritten (storage was behind for too long). */
  dropped(rows: StoredProfile[]): void;
  /** One bounded step of retention; returns how many went, or undefined when another instance had the turn. */
  prune(maxProfiles: number, maxAge: number | undefined, now: number): Awaitable<number | undefined>;
  /** A write or prune failed: what to tell. */
  failed(err: unknown): string[];
  close(): Awaitable<void>;
}

/**
 * A SQLite file: tokens of every process writing it are learnt into the shared bitmap, a file
 * deleted or replaced under us is noticed, a corrupt one is moved aside.
 */
export class SqliteSink implements ProfileSink {
  readonly pruneEveryMs = 0;
  private readonly handle: StoreHandle;
  private lastSeenId = 0;
  private readonly sums = new WaitingSums();

  constructor(private readonly file: string, private readonly taken: TokenBitmap, tell: (message: string) => void) {
    // The writer thread may wait for a lock (another process's writes, a migration at start): no request waits with it.
    this.handle = new StoreHandle(file, tell, (store) => {
      this.lastSeenId = 0;
      this.learnTokens(store);
    }, 2_000);
    this.handle.get();
  }

  /** Mark the tokens written since we last looked, including other processes' into the same file. */
  private learnTokens(store: ProfileStore): void {
    for (const { id, token } of store.tokensAfter(this.lastSeenId)) {
      this.taken.add(token);
      this.lastSeenId = id;
    }
  }

  changed(): string | undefined {
    const changed = this.handle.changed();
    if (!changed) return undefined;
    return changed === 'deleted'
      ? `profiler storage ${this.file} was deleted; starting a new file`
      : `profiler storage ${this.file} was replaced; reopening it`;
  }

  open(now: boolean): boolean {
    return this.handle.get(now) !== undefined;
  }

  write(rows: StoredProfile[], now: boolean): void {
    const sums = this.sums.forTransaction(now);
    this.lastSeenId = this.handle.get()!.insertSerialised(rows, this.lastSeenId, (token) => this.taken.add(token), sums.add);
    sums.committed();
  }

  sumsDueIn(): number | undefined {
    return this.sums.dueIn();
  }

  dropped(rows: StoredProfile[]): void {
    for (const row of rows) this.taken.delete(row.summary.token);
  }

  prune(maxProfiles: number, maxAge: number | undefined, now: number): number {
    const store = this.handle.get();
    if (!store) return 0;
    const gone = store.prune(maxProfiles, maxAge, now);
    for (const token of gone) this.taken.delete(token);
    return gone.length;
  }

  failed(err: unknown): string[] {
    const code = sqliteCode(err);
    if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return ['profiler storage is locked by another process; profiles wait and will be written'];
    const told = [`profiler storage failed (${code || (err as Error).message}); profiles wait and will be written`];
    this.handle.drop();
    if (isCorruption(err) && this.file !== ':memory:') {
      try {
        told.push(`profiler storage was corrupt: moved to ${ProfileStore.moveAside(this.file)}, starting a new file`);
      } catch {
        // Could not move it; the next open reports why.
      }
    }
    return told;
  }

  close(): void {
    this.handle.close();
  }
}
