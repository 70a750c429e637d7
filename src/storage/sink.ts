import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { WaitingSums } from './insight-sums.js';
import type { StoredProfile } from './profile.js';
import type { Awaitable } from './reader.js';
import { StoreHandle } from './store-handle.js';
import { sqliteCode } from './sqlite.js';
import { isCorruption, ProfileStore, type LaneHolder } from './store.js';
import type { TokenBitmap } from './token-bitmap.js';
import { LANES, PROVISIONAL_LENGTH } from '../recording/token.js';

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

/** A lane is touched this often while its process runs; one not touched for LANE_STALE_MS is free (its holder may be gone). */
const LANE_TOUCH_MS = 30_000;
const LANE_STALE_MS = 10 * 60_000;

/** The host as processes on it see each other's pids: two machines may share a host name (Linux names its boot), containers on one may not share pids (and their pid namespace). */
export const laneHost = [hostname(), ...['/proc/sys/kernel/random/boot_id', '/proc/self/ns/pid'].map((file) => {
  try {
    return file.includes('/ns/') ? readlinkSync(file) : readFileSync(file, 'utf8').trim();
  } catch {
    return '';
  }
})].join(' ');

/**
 * Whether a process holding a lane still runs: one not seen for long is taken to be gone (it gives
 * its lane up itself before then, see touchLane); one on this host is asked by its pid, so a crash
 * frees its lane at once.
 */
export const holderRuns = (row: LaneHolder): boolean => {
  if (row.seen < Date.now() - LANE_STALE_MS) return false;
  if (row.host !== laneHost) return true;
  try {
    process.kill(row.pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** Where this profiler draws its tokens in a SQLite file: the cell the request thread reads, and who holds the lane (one for the profiler's life, whatever restarts its thread). */
export interface Lane {
  cell: Int32Array;
  owner: string;
}

/**
 * A SQLite file: tokens of every process writing it are learnt into the shared bitmap, and this
 * profiler takes a token lane (see laneTokenSource), so that no two processes can draw the same
 * token. A file deleted or replaced under us is noticed, a corrupt one is moved aside.
 */
export class SqliteSink implements ProfileSink {
  readonly pruneEveryMs = 0;
  private readonly handle: StoreHandle;
  private lastSeenId = 0;
  private readonly sums = new WaitingSums();
  /** When the lane was last taken or touched. */
  private touched = 0;
  /** The lane this profiler held last, if any (a restarted thread finds it in the cell). */
  private last: number | undefined;
  private toldFull = false;
  private readonly toucher: NodeJS.Timeout;

  constructor(
    private readonly file: string,
    private readonly taken: TokenBitmap,
    private readonly lane: Lane,
    private readonly tell: (message: string) => void,
    /** Said once, not a trouble of storage (which "writable again" would end). */
    private readonly notice: (message: string) => void,
  ) {
    const held = this.held;
    if (held >= 0 && held < LANES) this.last = held;
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

  private get held(): number {
    return Atomics.load(this.lane.cell, 0);
  }

  /**
   * The lane held last (before a file reopened, a thread restarted, a lane let go) is taken again
   * where it is free: tokens drawn in it may still wait to be written, and another process may
   * have taken the lowest meanwhile.
   */
  private takeLane(store: ProfileStore): void {
    const lane = store.takeLane(LANES, { owner: this.lane.owner, host: laneHost, pid: process.pid, seen: Date.now() }, holderRuns, this.last) ?? LANES;
    this.touched = Date.now();
    if (lane < LANES) this.last = lane;
    Atomics.store(this.lane.cell, 0, lane);
    if (lane < LANES || this.toldFull) return;
    this.toldFull = true;
    this.notice(`profiler storage ${this.file}: all ${LANES} token lanes are held by running processes; this one's tokens are long ones (${PROVISIONAL_LENGTH} characters or more) until one is free (PostgreSQL suits more processes)`);
  }

  /**
   * Keep the lane; one another process took meanwhile (ours looked gone) is given up for another,
   * one missed when all were held is tried for again, and a file replaced under us is opened (and
   * a lane taken there) now rather than at the next write. A lane not touched for half the time
   * after which others may take it is let go: tokens are long ones until it is held again.
   */
  private touchLane(): void {
    try {
      const changed = this.changed();
      if (changed) this.tell(changed);
      const store = this.handle.get();
      const held = this.held;
      if (store && held >= 0 && held < LANES && store.touchLane(held, this.lane.owner, Date.now())) this.touched = Date.now();
      else if (store) this.takeLane(store);
    } catch {
      // Locked or failing now: the next touch tries again, and a write tells what is wrong.
    }
    if (Date.now() - this.touched > LANE_STALE_MS / 2) Atomics.store(this.lane.cell, 0, LANES);
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
    // What this profiler draws after it is closed is not in a lane it holds.
    Atomics.store(this.lane.cell, 0, LANES);
    try {
      this.handle.current?.releaseLane(this.lane.owner);
    } catch {
      // Left held: it is free once this process is gone (or, seen from another host, stale).
    }
    this.handle.close();
  }
}
