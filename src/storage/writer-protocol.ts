import type { AppInfo } from '../recording/app-info.js';
import type { RecordOptions } from '../redaction/record.js';
import type { Captured } from '../recording/capture.js';
import type { QueueOptions } from './queue.js';

/** What the writer thread needs of a profiler's options: plain data, no functions. */
export type WriterOptions = QueueOptions & RecordOptions & {
  debug: boolean;
  /** Sum what the insights page counts as each profile is stored (see storage/insight-sums.ts). */
  insights: boolean;
  /** When the profiler started (epoch ms): the insights' "since the app started". */
  started: number;
  /** The app, once its first request has been seen (see recording/app-info.ts). */
  app?: AppInfo;
};

/** Messages to the writer thread. Those with a seq are answered, and the caller waits. */
export type ToWriter =
  | { type: 'open'; id: number; options: WriterOptions; bits: SharedArrayBuffer; backlog: SharedArrayBuffer; slot: SharedArrayBuffer; owner: string }
  | { type: 'profiles'; id: number; items: Captured[] }
  | { type: 'app'; id: number; app: AppInfo }
  | { type: 'flush'; id: number; seq: number }
  | { type: 'close'; id: number; seq: number };

/** Messages from it: the answer to a waiting call, or trouble to tell a profiler's onError. */
export type FromWriter =
  | { type: 'reply'; seq: number; value: number }
  | { type: 'notice'; id: number; message: string };

/** Slots of the Int32Array the two threads share. */
export const SIGNAL = {
  /** The sequence number of the last call answered. */
  reply: 0,
  /** 1 once the thread runs. */
  ready: 1,
} as const;
