// The writer thread: builds, redacts, serialises and stores the profiles of every profiler in this
// process, so that the request's thread only takes a snapshot.
import { workerData, type MessagePort } from 'node:worker_threads';
import { buildProfile, onceEach } from '../collectors/build.js';
import { corePanels } from '../collectors/index.js';
import { snapshotOf, type Captured } from '../recording/snapshot.js';
import { WriteQueue } from './queue.js';
import { TokenBitmap } from './token-bitmap.js';
import { SIGNAL, type FromWriter, type ToWriter } from './writer-protocol.js';

const { port, signal } = workerData as { port: MessagePort; signal: Int32Array };
const queues = new Map<number, WriteQueue<Captured>>();

const send = (message: FromWriter) => port.postMessage(message);

/** Answer a call: the reply first, then the signal that wakes the caller to read it. */
function reply(seq: number, value: number): void {
  send({ type: 'reply', seq, value });
  Atomics.store(signal, SIGNAL.reply, seq);
  Atomics.notify(signal, SIGNAL.reply);
}

const weigh = (c: Captured) => c.size;

port.on('message', (msg: ToWriter) => {
  try {
    handle(msg);
  } catch (err) {
    // A bug here must not end the thread, nor leave a caller waiting for its answer.
    if ('id' in msg) send({ type: 'notice', id: msg.id, message: `profiler writer failed: ${(err as Error).stack ?? err}` });
    if ('seq' in msg) reply(msg.seq, 0);
  }
});

function handle(msg: ToWriter): void {
  switch (msg.type) {
    case 'open': {
      const tell = (message: string) => send({ type: 'notice', id: msg.id, message });
      const tellPanel = onceEach(tell);
      const { options } = msg;
      // What waits for this profiler, in bytes: added as its captures are handed over, taken back as they are stored or dropped.
      const backlog = new Int32Array(msg.backlog);
      const account = (bytes: number) => Atomics.add(backlog, 0, bytes);
      queues.set(msg.id, new WriteQueue(options, new TokenBitmap(msg.bits), (c: Captured) => buildProfile(snapshotOf(c), corePanels, options, tellPanel), tell, account, weigh));
      return;
    }
    case 'profiles':
      return queues.get(msg.id)?.push(msg.items);
    case 'flush':
      return reply(msg.seq, queues.get(msg.id)?.flush(true) ?? 0);
    case 'close':
      queues.get(msg.id)?.close();
      queues.delete(msg.id);
      return reply(msg.seq, 0);
  }
}

// Running: a flush() or close() that waits for a starting thread may go on.
Atomics.store(signal, SIGNAL.ready, 1);
Atomics.notify(signal, SIGNAL.ready);
