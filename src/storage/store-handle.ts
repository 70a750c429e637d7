import { statSync } from 'node:fs';
import { sqliteCode } from './sqlite.js';
import { ProfileStore } from './store.js';

const REOPEN_AFTER_MS = 2_000;
const BUSY_RETRY_MS = 50;
const BUSY_QUIET_MS = 2_000;

const isBusy = (err: unknown) => /^SQLITE_(BUSY|LOCKED)/.test(sqliteCode(err));

/**
 * A ProfileStore opened on demand and let go after trouble: a store that cannot be opened is
 * tried again after a pause, never on every call. Each thread that touches the file has its own.
 */
export class StoreHandle {
  private store: ProfileStore | undefined;
  /** The inode opened: a file deleted or replaced under us is noticed by changed(). */
  private inode = 0;
  private nextOpen = 0;
  /** When opening first found the file locked, in this run of tries (0: it did not). */
  private busySince = 0;
  private closed = false;

  constructor(
    readonly file: string,
    private readonly tell: (message: string) => void,
    /** Runs on each (re)open, inside the same guard: a store it cannot read is not kept. */
    private readonly opened: (store: ProfileStore) => void = () => {},
    /** See ProfileStore.open. */
    private readonly busyTimeout = 50,
  ) {}

  /** The store, opened on demand; undefined while it cannot be opened. `now` tries at once, pause or not. */
  get(now = false): ProfileStore | undefined {
    if (this.store || this.closed || (!now && Date.now() < this.nextOpen)) return this.store;
    let store: ProfileStore | undefined;
    try {
      store = ProfileStore.open(this.file, this.busyTimeout);
      this.inode = inodeOf(this.file);
      this.opened(store);
      this.store = store;
      this.busySince = 0;
    } catch (err) {
      store?.close();
      const at = Date.now();
      // Another connection opening a new file at the same moment (the pages' and the writer's, or
      // another process's) holds its lock while it migrates: try again soon, and say nothing
      // unless it lasts.
      if (isBusy(err) && at - (this.busySince ||= at) < BUSY_QUIET_MS) {
        this.nextOpen = at + BUSY_RETRY_MS;
        return undefined;
      }
      this.busySince = 0;
      this.nextOpen = at + REOPEN_AFTER_MS;
      this.tell(`cannot open profiler storage ${this.file}: ${(err as Error).message}; requests are served, profiles wait in memory`);
    }
    return this.store;
  }

  /** The store if it is open now, without opening it. */
  get current(): ProfileStore | undefined {
    return this.store;
  }

  /**
   * SQLite goes on using a file that was deleted or replaced, and what it writes there is lost.
   * A stat tells; then the old connection goes and the next get() opens the file now there.
   */
  changed(): 'deleted' | 'replaced' | undefined {
    if (!this.store) return undefined;
    const now = inodeOf(this.file);
    if (now === this.inode) return undefined;
    this.drop();
    return now === 0 ? 'deleted' : 'replaced';
  }

  /** Close the connection; the next get() opens a new one at once. */
  drop(): void {
    this.store?.close();
    this.store = undefined;
    this.nextOpen = 0;
  }

  close(): void {
    this.closed = true;
    this.drop();
  }
}

const inodeOf = (file: string): number => {
  try {
    return statSync(file).ino;
  } catch {
    return 0;
  }
};
