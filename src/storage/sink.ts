import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { WaitingSums } from './insight-sums.js';
import type { StoredProfile } from './profile.js';
import type { Awaitable } from './reader.js';
import { StoreHandle } from './store-handle.js';
import { sqliteCode } from './sqlite.js';
import { isCorruption, ProfileStore, type LaneHolder } from './store.js';
import type { TokenBitmap } from './token-bitmap.js';
import { LANE_UNKNOWN, LANES, PROVISIONAL_LENGTH } from '../recording/token.js';

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
  /** One bounded step of retention; returns how many went, or undefined when another instance had the turn. */
  prune(maxProfiles: number, maxAge: number | undefined, now: number): Awaitable<number | undefined>;
  /** A write or prune failed: what to tell. */
  failed(err: unknown): string[];
  close(): Awaitable<void>;
}

/** A lane is touched this often while its process runs; one not touched for LANE_STALE_MS is free (its holder on another host may be gone). */
const LANE_TOUCH_MS = 30_000;
const LANE_STALE_MS = 10 * 60_000;
const host = hostname();

/** Whether a process holding a lane still runs: on this host its pid tells at once (a crash frees its lane), elsewhere only its touches. */
const holderRuns = (row: LaneHolder): boolean => {
  if (row.seen < Date.now() - LANE_STALE_MS) return false;
  if (row.host !== host) return true;
  try {
    process.kill(row.pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * A SQLite file: tokens of every process writing it are learnt into the shared bitmap, and this
 * one takes a token lane (published to the request thread through `laneCell`, see
 * laneTokenSource), so that no two processes can draw the same token. A file deleted or replaced
 * under us is noticed, a corrupt one is moved aside.
 */
export class SqliteSink implements ProfileSink {
  readonly pruneEveryMs = 0;
  private readonly handle: StoreHandle;
  private lastSeenId = 0;
  private readonly sums = new WaitingSums();
  private readonly owner = randomUUID();
  private lane = LANE_UNKNOWN;
  private toldFull = false;
  private readonly toucher: NodeJS.Timeout;

  constructor(private readonly file: string, private readonly taken: TokenBitmap, private readonly laneCell: Int32Array, private readonly tell: (message: string) => void) {
    // The writer thread may wait for a lock (another process's writes, a migration at start): no request waits with it.
    this.handle = new StoreHandle(file, tell, (store) => {
      this.lastSeenId = 0;
      // What is stored is learnt before the first draw in a lane: a lane's earlier holder may have left profiles.
      this.learnTokens(store);
      this.takeLane(store);
    }, 2_000);
    this.toucher = setInterval(() => this.touchLane(), LANE_TOUCH_MS).unref();
    this.handle.get();
  }

  /** Mark the tokens written since we last looked, including other processes' into the same file. */
  private learnTokens(store: ProfileStore): void {
    for (const { id, token } of store.tokensAfter(this.lastSeenId)) {
      this.taken.add(token);
      this.lastSeenId = id;
    }
  }

  private takeLane(store: ProfileStore): void {
    this.lane = store.takeLane(LANES, { owner: this.owner, host, pid: process.pid, seen: Date.now() }, holderRuns) ?? LANES;
    Atomics.store(this.laneCell, 0, this.lane);
    if (this.lane < LANES || this.toldFull) return;
    this.toldFull = true;
    this.tell(`profiler storage ${this.file}: all ${LANES} token lanes are held by running processes; this one's tokens are ${PROVISIONAL_LENGTH} characters long (a shared PostgreSQL store suits more processes)`);
  }

  /** Keep the lane; one another process took meanwhile (ours looked gone) is given up for another, and one missed when all were held is tried for again. */
  private touchLane(): void {
    const store = this.handle.get();
    if (!store) return;
    try {
      if (this.lane < LANES && store.touchLane(this.lane, this.owner, Date.now())) return;
      this.takeLane(store);
    } catch {
      // Locked or failing now: the next touch tries again, and a write tells what is wrong.
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
    clearInterval(this.toucher);
    try {
      if (this.lane >= 0 && this.lane < LANES) this.handle.get()?.releaseLane(this.lane, this.owner);
    } catch {
      // Left held: it is free once this process is gone (or, seen from another host, stale).
    }
    this.handle.close();
  }
}
