import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import type { AppInfo } from '../recording/app-info.js';
import { sendable, type Captured } from '../recording/capture.js';
import { TokenBitmap } from './token-bitmap.js';
import { SIGNAL, type FromWriter, type ToWriter, type WriterOptions } from './writer-protocol.js';

/**
 * Snapshots wait on the request's thread at most this long, or until this many wait: short, so
 * that they die young (cheap to collect) and the thread's message cost is shared by many.
 */
const HANDOFF_MS = 10;
const HANDOFF_BATCH = 256;
/** A call the thread does not answer in this time (it died, or is stuck) gives up rather than hang the app. */
const CALL_TIMEOUT_MS = 10_000;
/** An explicit flush() or close() waits this long at most for a thread that is still starting. */
const READY_TIMEOUT_MS = 5_000;
/** What may wait for the writer, in bytes, for each profiler (captures on their way and profiles it could not store yet); beyond it new requests are not recorded, and counted. */
const MAX_BACKLOG_BYTES = 64 * 1024 * 1024;
/** A thread that cannot start is tried again after 0.5, 1 and 2 s; then recording stops. */
const START_ATTEMPTS = 4;
const RETRY_BASE_MS = 500;

/** Vitest runs the TypeScript sources; the thread always runs the built JavaScript (npm test builds first). */
const SCRIPT = __filename.endsWith('.ts')
  ? path.resolve(__dirname, '../../dist/storage/writer-thread.js')
  : path.join(__dirname, 'writer-thread.js');

type Open = Extract<ToWriter, { type: 'open' }>;
type Call = Exclude<ToWriter, { type: 'profiles' | 'open' | 'app' }>;
type Unsent<T> = T extends unknown ? Omit<T, 'seq'> : never;

/**
 * The one writer thread of this process, shared by its profilers; started on demand, again if it
 * dies. Nothing here ever waits for it on a request: posting is all a request does.
 */
class WriterThread {
  private worker: Worker | undefined;
  private port: MessagePort | undefined;
  /** Shared with the thread: the last answered call, and whether it is running. */
  readonly signal = new Int32Array(new SharedArrayBuffer(4 * 2));
  private seq = 0;
  private failures = 0;
  private retry: NodeJS.Timeout | undefined;
  /** Set once the thread could not be started, however often it was tried: recording stops. */
  stopped = false;
  private readonly profilers = new Map<number, { open: Open; tell: (message: string) => void }>();
  /** Calls a page awaits rather than blocks on: their answers come as messages. */
  private readonly awaited = new Map<number, (value: number) => void>();

  private start(): MessagePort | undefined {
    if (this.stopped || this.retry) return undefined;
    if (!existsSync(SCRIPT)) {
      this.cannotStart(`its script ${SCRIPT} is missing (a bundle must ship it beside the profiler's code)`);
      return undefined;
    }
    const { port1, port2 } = new MessageChannel();
    Atomics.store(this.signal, SIGNAL.ready, 0);
    let worker: Worker;
    try {
      // Its own (empty) execArgv: the app's flags (--input-type, loaders, -e) are not the writer's.
      worker = new Worker(SCRIPT, { execArgv: [], workerData: { port: port2, signal: this.signal }, transferList: [port2] });
    } catch (err) {
      this.cannotStart((err as Error).message);
      return undefined;
    }
    worker.unref();
    port1.on('message', (m: FromWriter) => this.receive(m));
    port1.unref();
    worker.on('error', (err) => this.lost(worker, `failed: ${err.message}`));
    worker.on('exit', (code) => this.lost(worker, `exited (code ${code})`));
    this.worker = worker;
    this.port = port1;
    // At start, and after a crash: the profilers it serves open their files.
    for (const { open } of this.profilers.values()) port1.postMessage(open);
    return port1;
  }

  private get ready(): boolean {
    return Atomics.load(this.signal, SIGNAL.ready) === 1;
  }

  private lost(worker: Worker, how: string): void {
    if (worker !== this.worker) return;
    const wasReady = this.ready;
    this.worker = undefined;
    this.port?.close();
    this.port = undefined;
    // What it held is gone with it.
    for (const { open } of this.profilers.values()) Atomics.store(new Int32Array(open.backlog), 0, 0);
    if (!wasReady) return this.cannotStart(how);
    this.failures = 0;
    for (const { tell } of this.profilers.values()) tell(`profiler writer thread ${how}; profiles not yet written are lost, a new thread takes over`);
  }

  /** Back off and try again, a few times; then stop recording, and say so once. */
  private cannotStart(why: string): void {
    this.failures++;
    if (this.failures < START_ATTEMPTS) {
      this.retry = setTimeout(() => {
        this.retry = undefined;
        if (this.profilers.size > 0) this.start();
      }, RETRY_BASE_MS * 2 ** (this.failures - 1)).unref();
      return;
    }
    this.stopped = true;
    for (const { tell } of this.profilers.values()) tell(`profiler writer thread cannot start (${why}); recording stopped, the app is served as usual`);
  }

  private receive(m: FromWriter): void {
    if (m.type === 'notice') this.profilers.get(m.id)?.tell(m.message);
    // A reply nobody waits for any more (its call timed out) has nothing left to do.
    else this.awaited.get(m.seq)?.(m.value);
  }

  open(open: Open, tell: (message: string) => void): void {
    this.profilers.set(open.id, { open, tell });
    if (this.port) this.port.postMessage(open);
    else this.start();
  }

  /** A message nobody waits for, if the thread runs; one that starts later has it in its open. */
  tell(msg: ToWriter): void {
    this.port?.postMessage(msg);
  }

  /** Returns false when the thread is not running (starting again after a failure, or stopped): the items are not recorded. */
  post(id: number, items: Captured[]): boolean {
    const port = this.port ?? this.start();
    if (!port) return false;
    try {
      port.postMessage({ type: 'profiles', id, items } satisfies ToWriter);
    } catch {
      // Something an app's own panel returned cannot cross to a thread (a function, a socket):
      // those snapshots go as plain copies, the others as they are.
      for (const item of items) {
        try {
          port.postMessage({ type: 'profiles', id, items: [item] } satisfies ToWriter);
        } catch {
          port.postMessage({ type: 'profiles', id, items: [sendable(item)] } satisfies ToWriter);
        }
      }
    }
    return true;
  }

  /**
   * Send and wait for the answer: for flush() and close(), which an app calls itself, never a
   * request. The thread stores the sequence number in the signal once its reply is posted, and
   * the reply is then read straight off the port. Notices met on the way are told in order.
   */
  call(msg: Unsent<Call>): number {
    const port = this.port ?? this.start();
    if (!port) return 0;
    if (!this.ready && Atomics.wait(this.signal, SIGNAL.ready, 0, READY_TIMEOUT_MS) === 'timed-out') {
      this.profilers.get(msg.id)?.tell(`profiler writer thread did not start within ${READY_TIMEOUT_MS} ms`);
      return 0;
    }
    const seq = ++this.seq;
    port.postMessage({ ...msg, seq } as ToWriter);
    const deadline = Date.now() + CALL_TIMEOUT_MS;
    for (;;) {
      for (let m = receiveMessageOnPort(port); m; m = receiveMessageOnPort(port)) {
        const message = m.message as FromWriter;
        if (message.type === 'reply' && message.seq === seq) return message.value;
        this.receive(message);
      }
      const seen = Atomics.load(this.signal, SIGNAL.reply);
      const left = deadline - Date.now();
      if (left <= 0) {
        this.profilers.get(msg.id)?.tell(`profiler writer thread did not answer "${msg.type}" within ${CALL_TIMEOUT_MS} ms`);
        return 0;
      }
      if (seen < seq) Atomics.wait(this.signal, SIGNAL.reply, seen, left);
    }
  }

  /**
   * Send and wait for the answer without blocking the thread: for a page that must show what was
   * just recorded. Resolves to 0 if the thread is not running or does not answer in time.
   */
  callSoon(msg: Unsent<Call>): Promise<number> {
    const port = this.port ?? this.start();
    if (!port) return Promise.resolve(0);
    const seq = ++this.seq;
    return new Promise((resolve) => {
      const timer = setTimeout(() => done(0), CALL_TIMEOUT_MS).unref();
      const done = (value: number) => {
        clearTimeout(timer);
        this.awaited.delete(seq);
        resolve(value);
      };
      this.awaited.set(seq, done);
      port.postMessage({ ...msg, seq } as ToWriter);
    });
  }

  /** A profiler closed: the last one out stops the thread. */
  forget(id: number): void {
    this.profilers.delete(id);
    if (this.profilers.size > 0) return;
    clearTimeout(this.retry);
    this.retry = undefined;
    if (!this.worker) return;
    const worker = this.worker;
    this.worker = undefined;
    this.port?.close();
    this.port = undefined;
    void worker.terminate();
  }
}

let thread: WriterThread | undefined;
let nextId = 1;

/**
 * One profiler's side of the writer thread: snapshots are handed over in small batches; flush()
 * and close() wait for the thread. The token bitmap is shared with it: tokens drawn here are
 * marked here, tokens stored by other processes or pruned are marked there.
 */
export class ProfileWriter {
  readonly taken = new TokenBitmap();
  /** Where this profiler draws its tokens, set by the thread once it has it (-1 until then): a shared store's slot, a SQLite file's lane. */
  readonly slot = new Int32Array(new SharedArrayBuffer(4)).fill(-1);
  /** Bytes of this profiler's captures not yet stored (on their way, or waiting for storage), shared with the thread. */
  private readonly backlog = new Int32Array(new SharedArrayBuffer(4));
  private pending: Captured[] = [];
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  /** Requests not recorded because the backlog was full, in this episode. */
  private refused = 0;
  private readonly id = nextId++;
  private readonly thread = (thread ??= new WriterThread());
  private readonly handoffLater = () => this.handoff();

  private readonly options: WriterOptions;

  /** Asks the thread to open the store, without waiting for it. */
  constructor(options: WriterOptions, private readonly tell: (message: string) => void) {
    this.options = { ...options };
    this.thread.open({ type: 'open', id: this.id, options: this.options, bits: this.taken.buffer, backlog: this.backlog.buffer as SharedArrayBuffer, slot: this.slot.buffer as SharedArrayBuffer, owner: randomUUID() }, tell);
  }

  /** The app, for the config panel: kept in the options a restarted thread is opened with too. */
  describeApp(app: AppInfo): void {
    this.options.app = app;
    this.thread.tell({ type: 'app', id: this.id, app });
  }

  /** The thread could not be started: requests are not recorded any more. */
  get stopped(): boolean {
    return this.thread.stopped;
  }

  push(snapshot: Captured): void {
    if (this.closed || this.thread.stopped) return;
    const backlog = Atomics.load(this.backlog, 0);
    if (backlog + snapshot.size > MAX_BACKLOG_BYTES) {
      if (this.refused++ === 0) this.tell(`profiler writer is behind (${MAX_BACKLOG_BYTES / 1024 / 1024} MiB waiting): requests are served but not recorded until it catches up`);
      return;
    }
    if (this.refused > 0 && backlog < MAX_BACKLOG_BYTES / 2) {
      this.tell(`profiler writer caught up; ${this.refused} requests were not recorded meanwhile`);
      this.refused = 0;
    }
    Atomics.add(this.backlog, 0, snapshot.size);
    this.pending.push(snapshot);
    if (this.pending.length >= HANDOFF_BATCH) this.handoff();
    else this.timer ??= setTimeout(this.handoffLater, HANDOFF_MS).unref();
  }

  /** Hand what waits to the thread now, without waiting for it to be written. */
  handoff(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.length === 0) return;
    const items = this.pending;
    this.pending = [];
    if (this.thread.post(this.id, items)) return;
    let bytes = 0;
    for (const item of items) bytes += item.size;
    Atomics.sub(this.backlog, 0, bytes);
  }

  /**
   * What a page reads right after a response: everything recorded so far, written now rather
   * than with the next batch, without blocking this thread. Resolves once it is stored.
   */
  settle(): Promise<number> {
    if (this.closed || this.thread.stopped) return Promise.resolve(0);
    this.handoff();
    return this.thread.callSoon({ type: 'flush', id: this.id });
  }

  /** Whether anything recorded is not stored yet (on its way to the thread, or waiting there). */
  get behind(): boolean {
    return this.pending.length > 0 || Atomics.load(this.backlog, 0) > 0;
  }

  /** Write everything recorded so far, and wait for it. Returns how many profiles were written. */
  flush(): number {
    if (this.closed) return 0;
    this.handoff();
    return this.thread.call({ type: 'flush', id: this.id });
  }

  close(): void {
    if (this.closed) return;
    this.handoff();
    this.closed = true;
    this.thread.call({ type: 'close', id: this.id });
    this.thread.forget(this.id);
  }
}
