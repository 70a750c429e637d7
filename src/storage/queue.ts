import type { StoredProfile } from './profile.js';
import type { ProfileSink } from './sink.js';

export interface QueueOptions {
  /** A SQLite file, or a postgres:// URL. */
  database: string;
  /** The PostgreSQL schema. */
  schema: string;
  /** This instance's name, stored with each profile. */
  instance: string;
  maxProfiles: number;
  maxAge: number;
  flushInterval: number;
}

/** Most profiles, and most bytes of them, waiting for a store that cannot take them (locked, missing, full, down); beyond either the oldest go, counted. */
const MAX_WAITING = 20_000;
const MAX_WAITING_BYTES = 48 * 1024 * 1024;
const RETRY_AFTER_MS = 2_000;
const BATCH = 1_000;
/** Age pruning scans by time: once a second is plenty. Count pruning is checked on every write (or as often as the sink allows). */
const AGE_PRUNE_EVERY_MS = 1_000;

/**
 * Batches finished requests and writes them in one transaction per flush, one flush at a time.
 * Storage trouble never reaches the app: it is told once, the batch waits, and writing resumes
 * when the store can take it again.
 */
export class WriteQueue<T> {
  private pending: T[] = [];
  private built: StoredProfile[] = [];
  private builtBytes = 0;
  private nextAgePrune = 0;
  private nextPrune = 0;
  private timer: NodeJS.Timeout | undefined;
  private dropped = 0;
  private closed = false;
  private morePrune = false;
  /** The flush under way: the next waits for it. */
  private running: Promise<number> = Promise.resolve(0);
  private busy = false;
  /** A timer fired while a flush ran: flush again when it ends. */
  private again = false;
  /** The troubles told in this episode: each is said once, however they alternate, and the episode's end is said too. */
  private troubles = new Set<string>();
  private readonly sink: ProfileSink;

  constructor(
    private readonly options: QueueOptions,
    sink: (tell: (message: string) => void) => ProfileSink,
    private readonly build: (item: T) => StoredProfile,
    private readonly onError: (message: string) => void,
    /** Told of bytes entering (positive) and leaving (negative) what waits: items as they are weighed, profiles as they are serialised. */
    private readonly account: (bytes: number) => void = () => {},
    private readonly weigh: (item: T) => number = () => 0,
  ) {
    this.sink = sink((m) => this.tell(m));
  }

  private tell(message: string): void {
    // "dropped so far" counts change: the first such line of an episode stands for the others.
    const key = message.replace(/\d+/g, '#');
    if (this.troubles.has(key)) return;
    this.troubles.add(key);
    this.onError(message);
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
      if (this.busy) this.again = true;
      else void this.flush();
    }, delay);
    this.timer.unref();
  }

  /**
   * Write everything that waits; resolves to the number of profiles written. `now` (an explicit
   * flush()) tries a store that could not be opened at once, not after the pause, and writes the
   * insights' sums that wait (see WaitingSums) whether due or not.
   */
  flush(now = false): Promise<number> {
    const run = this.running.then(() => this.flushOnce(now));
    this.running = run.catch(() => 0);
    return run;
  }

  private async flushOnce(now: boolean): Promise<number> {
    this.busy = true;
    try {
      return await this.write(now);
    } finally {
      this.busy = false;
      if (this.again && !this.closed) {
        this.again = false;
        this.schedule(0);
      }
    }
  }

  private async write(now: boolean): Promise<number> {
    const changed = this.sink.changed();
    if (changed) this.tell(changed);
    const items = this.pending;
    this.pending = [];
    for (const item of items) {
      let row: StoredProfile;
      try {
        row = this.build(item);
      } catch (err) {
        // One that cannot be built loses only itself, never the batch it came with.
        this.account(-this.weigh(item));
        this.onError(`profiler could not store a profile: ${(err as Error)?.message ?? err}`);
        continue;
      }
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
      // Their tokens went out in responses: they stay taken (in the bitmap), so that no later request is shown under them.
      for (const row of gone) this.account(-row.data.length);
      this.dropped += over;
      this.tell(`profiler storage is behind: ${this.dropped} profiles dropped so far`);
    }
    const sumsDue = this.sumsDue(now);
    if (this.built.length === 0 && !this.morePrune && !sumsDue) return this.sumsLater();
    if (!(await this.sink.open(now))) return this.built.length > 0 || sumsDue ? this.retryLater() : 0;
    if (this.built.length === 0) {
      if (sumsDue && !(await this.stored([], now))) return this.retryLater();
      await this.prune();
      return 0;
    }
    const batch = this.built;
    const bytes = this.builtBytes;
    if (!(await this.stored(batch, now))) return this.retryLater();
    // Only this flush touches `built`: what was built meanwhile is still in `pending`.
    this.built = [];
    this.builtBytes = 0;
    this.account(-bytes);
    if (this.troubles.size > 0) {
      this.troubles.clear();
      this.onError(`profiler storage is writable again: ${batch.length} waiting profiles written`);
    }
    await this.prune();
    return batch.length;
  }

  /** Write rows (or only the insights' sums that wait); then come back when the sums that still wait are due. */
  private async stored(rows: StoredProfile[], now: boolean): Promise<boolean> {
    try {
      await this.sink.write(rows, now);
    } catch (err) {
      this.failed(err);
      return false;
    }
    this.sumsLater();
    return true;
  }

  /** Come back when the insights' sums that wait are due (a timer may fire a little early: then again). */
  private sumsLater(): number {
    const due = this.sink.sumsDueIn();
    if (due !== undefined && !this.closed) this.schedule(Math.max(1, due));
    return 0;
  }

  /** The insights' sums that wait are to be written now: due, or asked for (`now`). */
  private sumsDue(now: boolean): boolean {
    const due = this.sink.sumsDueIn();
    return due !== undefined && (now || due === 0);
  }

  private retryLater(): number {
    if (!this.closed) this.schedule(RETRY_AFTER_MS);
    return 0;
  }

  private async prune(): Promise<void> {
    const now = Date.now();
    if (now < this.nextPrune) {
      // What was just written may be over the limit: come back when the gate opens, or a store
      // whose writes stop here (another instance pruned before this batch landed) stays over it.
      this.morePrune = true;
      this.schedule(this.nextPrune - now);
      return;
    }
    this.nextPrune = now + this.sink.pruneEveryMs;
    const byAge = now >= this.nextAgePrune;
    if (byAge) this.nextAgePrune = now + AGE_PRUNE_EVERY_MS;
    try {
      const gone = await this.sink.prune(this.options.maxProfiles, byAge ? this.options.maxAge : undefined, now);
      // Something went: there may be more, so another bounded step soon, never one long delete.
      // Another instance had the turn: ask again later, in case it stops before it is done.
      this.morePrune = gone !== 0;
      if (gone) this.nextPrune = now;
      if (this.morePrune) {
        this.nextAgePrune = 0;
        this.schedule(gone === undefined ? this.sink.pruneEveryMs : this.options.flushInterval);
      }
    } catch (err) {
      this.failed(err);
    }
  }

  private failed(err: unknown): void {
    for (const message of this.sink.failed(err)) this.tell(message);
  }

  async close(): Promise<void> {
    clearTimeout(this.timer);
    // Now: the insights' sums that wait are written too.
    await this.flush(true);
    this.closed = true;
    clearTimeout(this.timer);
    await this.sink.close();
  }
}
