import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import { sendable, type Captured } from '../recording/snapshot.js';
import { TokenBitmap } from './token-bitmap.js';
import type { FromWriter, ToWriter, WriterOptions } from './writer-protocol.js';

/**
 * Snapshots wait on the request's thread at most this long, or until this many wait: short, so
 * that they die young (cheap to collect) and the thread's message cost is shared by many.
 */
const HANDOFF_MS = 10;
const HANDOFF_BATCH = 256;
/** A call the thread does not answer in this time (it died, or is stuck) gives up rather than hang the app. */
const CALL_TIMEOUT_MS = 10_000;

/** Vitest runs the TypeScript sources; the thread always runs the built JavaScript (npm test builds first). */
const SCRIPT = import.meta.url.endsWith('.ts')
  ? new URL('../../dist/storage/writer-thread.js', import.meta.url)
  : new URL('./writer-thread.js', import.meta.url);

type Open = Extract<ToWriter, { type: 'open' }>;
type Call = Exclude<ToWriter, { type: 'profiles' }>;
type Unsent<T> = T extends unknown ? Omit<T, 'seq'> : never;

/** The one writer thread of this process, shared by its profilers; started on demand, again if it dies. */
class WriterThread {
  private worker: Worker | undefined;
  private port: MessagePort | undefined;
  private readonly signal = new Int32Array(new SharedArrayBuffer(4));
  private seq = 0;
  private readonly profilers = new Map<number, { open: Unsent<Open>; tell: (message: string) => void }>();

  private start(): MessagePort {
    const { port1, port2 } = new MessageChannel();
    const worker = new Worker(SCRIPT, { workerData: { port: port2, signal: this.signal }, transferList: [port2] });
    worker.unref();
    port1.on('message', (m: FromWriter) => this.receive(m));
    port1.unref();
    worker.on('error', (err) => this.lost(worker, `profiler writer thread failed: ${err.message}`));
    worker.on('exit', (code) => this.lost(worker, `profiler writer thread exited (code ${code})`));
    this.worker = worker;
    this.port = port1;
    // After a crash: the profilers it served open their files again.
    for (const { open } of this.profilers.values()) this.call(open);
    return port1;
  }

  private lost(worker: Worker, message: string): void {
    if (worker !== this.worker) return;
    this.worker = undefined;
    this.port?.close();
    this.port = undefined;
    for (const { tell } of this.profilers.values()) tell(`${message}; profiles not yet written are lost, a new thread takes over`);
  }

  private receive(m: FromWriter): void {
    // A reply nobody waits for any more (its call timed out) has nothing left to do.
    if (m.type === 'notice') this.profilers.get(m.id)?.tell(m.message);
  }

  open(open: Unsent<Open>, tell: (message: string) => void): void {
    this.profilers.set(open.id, { open, tell });
    if (this.port) this.call(open);
    else this.start();
  }

  post(id: number, items: Captured[]): void {
    const port = this.port ?? this.start();
    try {
      port.postMessage({ type: 'profiles', id, items } satisfies ToWriter);
    } catch {
      // Something in a snapshot cannot cross to a thread (a function, a socket in a body or a log
      // line): those snapshots go as plain copies, the others as they are.
      for (const item of items) {
        try {
          port.postMessage({ type: 'profiles', id, items: [item] } satisfies ToWriter);
        } catch {
          port.postMessage({ type: 'profiles', id, items: [sendable(item)] } satisfies ToWriter);
        }
      }
    }
  }

  /**
   * Send and wait for the answer: the thread stores the sequence number in `signal` once its reply
   * is posted, and the reply is then read straight off the port. Notices met on the way are told
   * in order, so trouble found by a flush is heard before flush() returns.
   */
  call(msg: Unsent<Call>): number {
    const port = this.port ?? this.start();
    const seq = ++this.seq;
    port.postMessage({ ...msg, seq } as ToWriter);
    const deadline = Date.now() + CALL_TIMEOUT_MS;
    for (;;) {
      for (let m = receiveMessageOnPort(port); m; m = receiveMessageOnPort(port)) {
        const message = m.message as FromWriter;
        if (message.type === 'reply' && message.seq === seq) return message.value;
        this.receive(message);
      }
      const seen = Atomics.load(this.signal, 0);
      const left = deadline - Date.now();
      if (left <= 0) {
        this.profilers.get(msg.id)?.tell(`profiler writer thread did not answer "${msg.type}" within ${CALL_TIMEOUT_MS} ms`);
        return 0;
      }
      if (seen < seq) Atomics.wait(this.signal, 0, seen, left);
    }
  }

  /** A profiler closed: the last one out stops the thread. */
  forget(id: number): void {
    this.profilers.delete(id);
    if (this.profilers.size > 0 || !this.worker) return;
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
 * One profiler's side of the writer thread: snapshots are handed over in small batches, flush()
 * and close() wait for the thread. The token bitmap is shared with it: tokens drawn here are
 * marked here, tokens stored by other processes or pruned are marked there.
 */
export class ProfileWriter {
  readonly taken = new TokenBitmap();
  private pending: Captured[] = [];
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly id = nextId++;
  private readonly thread = (thread ??= new WriterThread());
  private readonly handoffLater = () => this.handoff();

  /** Opens the store in the thread and waits for it: tokens already stored are known before the first request. */
  constructor(options: WriterOptions, tell: (message: string) => void) {
    this.thread.open({ type: 'open', id: this.id, options, bits: this.taken.buffer }, tell);
  }

  push(snapshot: Captured): void {
    if (this.closed) return;
    this.pending.push(snapshot);
    if (this.pending.length >= HANDOFF_BATCH) this.handoff();
    else this.timer ??= setTimeout(this.handoffLater, HANDOFF_MS).unref();
  }

  private handoff(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.length === 0) return;
    const items = this.pending;
    this.pending = [];
    this.thread.post(this.id, items);
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
