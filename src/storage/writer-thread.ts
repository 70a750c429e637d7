// The writer thread: redacts, serialises and stores the captures of every profiler in this process
// as records, so that the request's thread only takes a capture. The pages derive the rest.
import { workerData, type MessagePort } from 'node:worker_threads';
import type { Captured } from '../recording/capture.js';
import { processConfig } from '../recording/process-config.js';
import { recordOf, sealedRow } from '../redaction/record.js';
import { redactValue } from '../redaction/redact.js';
import { serialiseRecord } from './profile.js';
import { factsOf } from '../redaction/facts.js';
import { PgSink } from './pg-sink.js';
import { isPostgresUrl } from './location.js';
import { WriteQueue } from './queue.js';
import { SqliteSink } from './sink.js';
import { TokenBitmap } from './token-bitmap.js';
import { SIGNAL, type FromWriter, type ToWriter, type WriterOptions } from './writer-protocol.js';

const { port, signal } = workerData as { port: MessagePort; signal: Int32Array };
const queues = new Map<number, WriteQueue<Captured>>();
/** Each profiler's panel options: the app's description joins them once its first request is seen. */
const panelOptions = new Map<number, WriterOptions>();

const send = (message: FromWriter) => port.postMessage(message);

/** Answer a call: the reply first, then the signal that wakes the caller to read it. */
function reply(seq: number, value: number): void {
  send({ type: 'reply', seq, value });
  Atomics.store(signal, SIGNAL.reply, seq);
  Atomics.notify(signal, SIGNAL.reply);
}

const weigh = (c: Captured) => c.size;

/** A bug here must not end the thread, nor leave a caller waiting for its answer. */
function failed(msg: ToWriter, err: unknown): void {
  if ('id' in msg) send({ type: 'notice', id: msg.id, message: `profiler writer failed: ${(err as Error)?.stack ?? err}` });
  if ('seq' in msg) reply(msg.seq, 0);
}

port.on('message', (msg: ToWriter) => {
  try {
    handle(msg);
  } catch (err) {
    failed(msg, err);
  }
});

function handle(msg: ToWriter): void {
  switch (msg.type) {
    case 'open': {
      const tell = (message: string) => send({ type: 'notice', id: msg.id, message });
      const { options } = msg;
      panelOptions.set(msg.id, options);
      // What waits for this profiler, in bytes: added as its captures are handed over, taken back as they are stored or dropped.
      const backlog = new Int32Array(msg.backlog);
      const account = (bytes: number) => Atomics.add(backlog, 0, bytes);
      const taken = new TokenBitmap(msg.bits);
      const sink = isPostgresUrl(options.database)
        ? (told: typeof tell) => new PgSink({ url: options.database, schema: options.schema, instance: options.instance }, taken, new Int32Array(msg.slot), told)
        : (told: typeof tell) => new SqliteSink(options.database, taken, { cell: new Int32Array(msg.slot), owner: msg.owner }, told, tell);
      const build = (c: Captured) => {
        const { summary, record, hidden } = recordOf(c, options);
        const type = c.command === undefined ? 'request' : 'command';
        const row = serialiseRecord({ ...summary, type, instance: options.instance }, record, processConfig(options.debug, options.app));
        // What it adds to the insights across requests, where they are on: a failure costs those, never the profile.
        if (options.insights) {
          try {
            row.insights = { since: options.started, facts: factsOf(row.summary, record, type, (text) => hidden.cut(text)) };
          } catch (err) {
            tell(`a profile's insights could not be derived: ${(err as Error)?.message ?? err}`);
          }
        }
        return sealedRow(row, hidden);
      };
      queues.set(msg.id, new WriteQueue(options, sink, build, tell, account, weigh));
      return;
    }
    case 'profiles':
      return queues.get(msg.id)?.push(msg.items);
    case 'app': {
      const options = panelOptions.get(msg.id);
      if (options) options.app = { ...msg.app, settings: redactValue(msg.app.settings, options.redactKeys) as Record<string, unknown> };
      return;
    }
    case 'flush': {
      const queue = queues.get(msg.id);
      if (!queue) return reply(msg.seq, 0);
      void queue.flush(true).then((n) => reply(msg.seq, n), (err) => failed(msg, err));
      return;
    }
    case 'close': {
      const queue = queues.get(msg.id);
      queues.delete(msg.id);
      panelOptions.delete(msg.id);
      void Promise.resolve(queue?.close()).then(() => reply(msg.seq, 0), (err) => failed(msg, err));
      return;
    }
  }
}

// Running: a flush() or close() that waits for a starting thread may go on.
Atomics.store(signal, SIGNAL.ready, 1);
Atomics.notify(signal, SIGNAL.ready);
