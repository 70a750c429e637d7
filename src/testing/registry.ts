import dc from 'node:diagnostics_channel';
import type { Profile } from '../storage/profile.js';

/** A request of a profiler's that answered 5xx or threw: what a failed test is shown. */
export interface Failure {
  token: string;
  /** Epoch milliseconds at arrival. */
  time: number;
  status: number;
}

/** What the tests read of a running profiler. */
export interface Readable {
  /** The profile of a token, derived as the pages show it, once whatever waits is written; undefined where this profiler has none. */
  read(token: string): Promise<Profile | undefined>;
  /** Its requests that failed from `since` on, oldest first. */
  failures(since: number): Failure[];
}

/**
 * The profilers of this process answer on a diagnostics channel: channels are the process's own,
 * shared by every realm, so a test runner's (a jest environment's) reaches the profilers its tests
 * made in theirs.
 */
const bus = dc.channel('express-web-profiler:testing');

/** A profiler answers from now until it is closed. */
export function answer(readable: Readable): () => void {
  const onAsk = (message: unknown) => (message as { profilers: Readable[] }).profilers.push(readable);
  bus.subscribe(onAsk);
  return () => bus.unsubscribe(onAsk);
}

export function running(): Readable[] {
  const message = { profilers: [] as Readable[] };
  if (bus.hasSubscribers) bus.publish(message);
  return message.profilers;
}

/** Failed requests are kept this many per profiler: enough for the requests of one test. */
export const KEPT_FAILURES = 50;
