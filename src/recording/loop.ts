import { PerformanceObserver, performance } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import type { WorkContext } from './context.js';

/**
 * The event loop as one request lived it: the synchronous stretches of its own that held the loop
 * (and the requests they delayed), the stretches of others' it waited behind, the garbage
 * collections while it was in flight, the heap at its start and end. Times are ms since it
 * arrived. Nothing here runs on a timer: a stretch is timed where the router calls the app's code,
 * a collection is told by V8 (with the heapAndGc option).
 */
export interface LoopState {
  /** Heap used at arrival and at the end (-1 until then), in bytes: with the heapAndGc option. */
  heap?: [number, number];
  /** Its own stretches of at least BLOCK_MS, and the requests in flight they held up. */
  blocks?: { start: number; duration: number; delayed: string[] }[];
  /** Others' stretches it waited behind: whose, how long, and whether it arrived during one (its wait began when its bytes did, which nobody sees: at most `ms`). */
  waits?: { by: string; ms: number; arrived?: true }[];
  gc?: { count: number; ms: number };
}

/** A synchronous stretch this long holds every other request up noticeably: it is named. */
export const BLOCK_MS = 50;

const inFlight = new Set<WorkContext>();
/**
 * The last stretch that held the loop. What arrived during it is read after it, one connection a
 * turn of the loop (about 1.5 ms each here): a request that starts within the stretch's own length
 * after it (at most BACKLOG_MS) waited behind it, or behind the backlog it left.
 */
let lastBlock: { by: string; duration: number; end: number } | undefined;
const BACKLOG_MS = 100;

const heapUsed = () => getHeapStatistics().used_heap_size;

/** A request or command starts: it is in flight. */
export function loopStarted(ctx: WorkContext): void {
  ctx.loop = {};
  // Reading the heap twice a request and hearing of every collection cost about 4% of a hello
  // route's CPU (measured, whole process): asked for with the heapAndGc option.
  if (ctx.recorder.heapAndGc) {
    observeGc();
    ctx.loop.heap = [heapUsed(), -1];
  }
  inFlight.add(ctx);
  if (lastBlock !== undefined && ctx.start - lastBlock.end <= Math.min(lastBlock.duration, BACKLOG_MS)) (ctx.loop.waits ??= []).push({ by: lastBlock.by, ms: round(lastBlock.duration), arrived: true });
}

export function loopFinished(ctx: WorkContext): void {
  inFlight.delete(ctx);
  if (ctx.loop?.heap === undefined) return;
  ctx.loop.heap[1] = heapUsed();
  // V8 tells of a collection a moment after it (its entries come on a later turn of the loop), when
  // a request that ran during it may have finished: finished ones are kept a moment for it.
  finished[next] = { start: ctx.start, end: ctx.start + ctx.end, loop: ctx.loop };
  next = (next + 1) % MAX_FINISHED;
}

/** When the latest requests ran, and their loop state: a collection told late still counts for them (their capture holds the same object until the writer takes it). */
const finished: { start: number; end: number; loop: LoopState }[] = [];
const MAX_FINISHED = 256;
let next = 0;

/** The app's code for ctx ran synchronously from `since` (performance.now()) until now: named when it held the loop. */
export function ranFor(ctx: WorkContext, since: number): void {
  const duration = performance.now() - since;
  if (duration < BLOCK_MS || ctx.loop === undefined) return;
  const delayed: string[] = [];
  for (const other of inFlight) {
    if (other === ctx || other.loop === undefined) continue;
    delayed.push(other.token);
    (other.loop.waits ??= []).push({ by: ctx.token, ms: round(Math.min(duration, since + duration - other.start)) });
  }
  (ctx.loop.blocks ??= []).push({ start: round(since - ctx.start), duration: round(duration), delayed });
  lastBlock = { by: ctx.token, duration, end: since + duration };
}

let observing = false;

/** Collections while requests are in flight: each counts for every one of them. */
function observeGc(): void {
  if (observing) return;
  observing = true;
  try {
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        const count = (start: number, end: number, loop: LoopState | undefined) => {
          // In flight during it: started before it ended, and not ended before it began.
          if (loop === undefined || start > entry.startTime + entry.duration || end < entry.startTime) return;
          const gc = (loop.gc ??= { count: 0, ms: 0 });
          gc.count++;
          gc.ms = round(gc.ms + entry.duration);
        };
        for (const ctx of inFlight) count(ctx.start, Infinity, ctx.loop);
        for (const f of finished) count(f.start, f.end, f.loop);
      }
    }).observe({ entryTypes: ['gc'] });
  } catch {
    // A runtime without GC entries: no pauses are told.
  }
}

const round = (ms: number) => Math.round(ms * 1000) / 1000;
