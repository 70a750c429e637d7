import { Session } from 'node:inspector';
import { findSourceMap } from 'node:module';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import type { WorkContext } from './context.js';

/** V8's sampling interval, in µs: its default, about 1 ms, cheap enough to leave on for one request. */
const INTERVAL_US = 1000;
/** A profile runs at most this long: a request that never ends must not keep the profiler on. */
export const MAX_CPU_MS = 10_000;
const COOKIE = /(?:^|;\s*)_wp_profile=cpu(?:;|$)/;

/** What a profiled request carries, from the start of its profile to its capture. */
export interface CpuState {
  /** Another request was being profiled: this one was not. */
  busy?: boolean;
  /** It asked through the toolbar's one-shot cookie, which its response clears. */
  fromCookie: boolean;
  started: number;
  /** Requests that started while this one was profiled: their samples are mixed in. */
  others: number;
  capped: boolean;
  profile?: unknown;
  startMs?: number;
  /**
   * The request's arrival on the clock V8 times a profile with (the monotonic clock, in µs, as
   * process.hrtime): to find the samples of a moment of the request's. A profile's own start can
   * come well before its first sample (V8 readies itself first, a long while on a loaded machine).
   */
  origin?: number;
}

/**
 * V8's mid-tier compiler, Maglev (on from Node 22), inlines small functions without telling the
 * sampling profiler, which then charges their time to the caller: a profile of warm code named
 * the route handler for the work of every function it called. It is turned off when a process is
 * first asked for a CPU profile, for code compiled from then on, as on Node 20; TurboFan, which
 * tells what it inlines, still optimises hot code. Not before: Maglev makes warm code faster, the
 * recorder's own included (on Node 24, turned off at start, the recorder's thread took about a
 * fifth more a request, measured). Called once: the session it comes with is kept.
 */
function exactCpuProfiles(): void {
  try {
    setFlagsFromString('--no-maglev');
  } catch {
    // A V8 without the flag has no such compiler.
  }
}

/** Whether a request asks to be CPU-profiled: `X-Debug-Profile: cpu`, or the toolbar's cookie. */
export function cpuAsked(headers: { [key: string]: string | string[] | undefined }): 'header' | 'cookie' | undefined {
  if (String(headers['x-debug-profile'] ?? '').trim().toLowerCase() === 'cpu') return 'header';
  const cookie = headers.cookie;
  // Every request with cookies comes here: the regex only for one that names ours.
  return typeof cookie === 'string' && cookie.includes('_wp_profile=') && COOKIE.test(cookie) ? 'cookie' : undefined;
}

let session: Session | undefined;
let running: { ctx: WorkContext; timer: NodeJS.Timeout } | undefined;

/** One profile at a time per process: the V8 profiler is the process's. */
export const cpuRunning = (): boolean => running !== undefined;

/** Another request started while one is profiled. */
export function cpuNoteOther(ctx: WorkContext): void {
  if (running !== undefined && running.ctx !== ctx && running.ctx.cpu) running.ctx.cpu.others++;
}

/** Start profiling ctx's request, or mark it busy when another is profiled. */
export function startCpu(ctx: WorkContext, how: 'header' | 'cookie' | 'asked'): void {
  const state: CpuState = { fromCookie: how === 'cookie', started: performance.now(), others: 0, capped: false };
  ctx.cpu = state;
  if (running !== undefined) {
    state.busy = true;
    return;
  }
  if (session === undefined) {
    exactCpuProfiles();
    session = new Session();
    session.connect();
    session.post('Profiler.enable');
  }
  session.post('Profiler.setSamplingInterval', { interval: INTERVAL_US });
  session.post('Profiler.start');
  state.startMs = performance.now() - state.started;
  state.origin = Number(process.hrtime.bigint() / 1000n) - (performance.now() - ctx.start) * 1000;
  const timer = setTimeout(() => {
    state.capped = true;
    stopCpu(ctx);
  }, MAX_CPU_MS);
  timer.unref();
  running = { ctx, timer };
}

/** Stop ctx's profile (if it is the one running) and keep it on ctx. The inspector answers synchronously. */
export function stopCpu(ctx: WorkContext): void {
  if (running === undefined || running.ctx !== ctx || session === undefined) return;
  clearTimeout(running.timer);
  running = undefined;
  session.post('Profiler.stop', (err, result) => {
    if (!err && ctx.cpu) ctx.cpu.profile = result.profile;
  });
}

interface CallFrame {
  url: string;
  lineNumber: number;
  columnNumber: number;
}

/**
 * The profile with each frame's place as the app's sources name it (a source map, when the
 * process has one for the file): the writer thread, which builds the panel, cannot read them.
 */
export function sourceMapped(profile: unknown): unknown {
  const p = profile as { nodes?: { callFrame: CallFrame & { source?: string; sourceLine?: number } }[] };
  const seen = new Map<string, { source: string; line: number } | null>();
  for (const node of p.nodes ?? []) {
    const { url, lineNumber, columnNumber } = node.callFrame;
    if (!url || url.startsWith('node:')) continue;
    const key = `${url}:${lineNumber}:${columnNumber}`;
    let mapped = seen.get(key);
    if (mapped === undefined) {
      mapped = null;
      try {
        const file = url.startsWith('file://') ? fileURLToPath(url) : url;
        const entry = findSourceMap(file)?.findEntry(lineNumber, columnNumber) as { originalSource?: string; originalLine?: number } | undefined;
        if (entry?.originalSource) mapped = { source: entry.originalSource.startsWith('file://') ? fileURLToPath(entry.originalSource) : entry.originalSource, line: (entry.originalLine ?? 0) + 1 };
      } catch {
        // No map for it: its own place stands.
      }
      seen.set(key, mapped);
    }
    if (mapped) {
      node.callFrame.source = mapped.source;
      node.callFrame.sourceLine = mapped.line;
    }
  }
  return profile;
}
