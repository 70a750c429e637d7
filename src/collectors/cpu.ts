import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CorePanel } from './collector.js';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  source?: string;
  sourceLine?: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

export type FrameKind = 'app' | 'vendor' | 'node' | 'v8';

export interface CpuFunction {
  name: string;
  file: string;
  line: number;
  kind: FrameKind;
  /** Milliseconds spent in the function itself, and in it and what it called. */
  self: number;
  total: number;
}

/** A node of the flame graph: frames merged by stack. */
export interface FlameNode {
  /** Name, file, line, kind. */
  n: string;
  f: string;
  l: number;
  k: FrameKind;
  /** Total and self milliseconds. */
  v: number;
  s: number;
  c?: FlameNode[];
}

export interface CpuData {
  /** Another request was being profiled: this one was not. */
  busy?: boolean;
  /** The profile hit the cap on its duration and was stopped early. */
  capped?: boolean;
  /** Requests that started while this one was profiled: their samples are mixed in. */
  others: number;
  /** Mean sampling interval and profile length, ms; the sample count; how long starting the profiler took. */
  interval?: number;
  duration?: number;
  samples?: number;
  startMs?: number;
  functions?: CpuFunction[];
  flame?: FlameNode;
  /** For each stretch of the request's that held the event loop (see recording/loop.ts): the stack the profile saw most in it, innermost first, to the end of the app's own frames. */
  held?: { start: number; stack: Omit<CpuFunction, 'self' | 'total'>[] }[];
}

const V8_FRAMES = new Set(['(root)', '(program)', '(idle)', '(garbage collector)']);
const round = (ms: number) => Math.round(ms * 1000) / 1000;
/** Parts of the graph smaller than this share of the whole are left out: they would be less than a pixel wide. */
const FLAME_MIN_SHARE = 0.002;
const TOP_FUNCTIONS = 100;

/** A tick V8 gives no JavaScript frame: (root), (program), (idle), (garbage collector). */
const isV8Frame = (frame: CallFrame) => V8_FRAMES.has(frame.functionName) && !frame.url;

function describe(frame: CallFrame): { name: string; file: string; line: number; kind: FrameKind } {
  const name = frame.functionName || '(anonymous)';
  if (isV8Frame(frame)) return { name, file: '', line: 0, kind: 'v8' };
  let file = frame.source ?? frame.url;
  if (file.startsWith('file://')) {
    try {
      file = fileURLToPath(file);
    } catch {
      // Left as V8 named it.
    }
  }
  const line = frame.sourceLine ?? frame.lineNumber + 1;
  const kind: FrameKind = !file || file.startsWith('node:') || !path.isAbsolute(file) ? 'node' : /[\\/]node_modules[\\/]/.test(file) ? 'vendor' : 'app';
  return { name, file, line, kind };
}

/**
 * The request's CPU profile as a panel: time per function (self and total, recursion counted
 * once), and a flame graph of the stacks merged, left-heavy, cut below a visible width.
 */
export function cpuData(cpu: { busy?: boolean; capped: boolean; others: number; startMs?: number; origin?: number; profile?: unknown }, blocks?: { start: number; duration: number }[]): CpuData {
  if (cpu.busy) return { busy: true, others: 0 };
  const profile = cpu.profile as CpuProfile | undefined;
  const data: CpuData = { others: cpu.others };
  if (cpu.capped) data.capped = true;
  if (cpu.startMs !== undefined) data.startMs = round(cpu.startMs);
  if (!profile?.nodes?.length) return data;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  // A sample lasts until the next one (as DevTools counts): the gap before the first is the profiler starting, no one's time.
  for (let i = 0; i + 1 < samples.length; i++) self.set(samples[i], (self.get(samples[i]) ?? 0) + (deltas[i + 1] ?? 0) / 1000);
  const totals = new Map<number, number>();
  const totalOf = (id: number): number => {
    const node = byId.get(id);
    let t = self.get(id) ?? 0;
    for (const child of node?.children ?? []) t += totalOf(child);
    totals.set(id, t);
    return t;
  };
  const root = profile.nodes[0];
  const all = totalOf(root.id);

  const functions = new Map<string, CpuFunction>();
  const open = new Map<string, number>();
  const walkFunctions = (id: number) => {
    const node = byId.get(id)!;
    const d = describe(node.callFrame);
    const key = `${d.name}\u0000${d.file}\u0000${d.line}`;
    let fn = functions.get(key);
    if (fn === undefined) functions.set(key, (fn = { ...d, self: 0, total: 0 }));
    fn.self += self.get(id) ?? 0;
    // A function on the stack already (recursion) has its time counted there.
    if (!open.get(key)) fn.total += totals.get(id) ?? 0;
    open.set(key, (open.get(key) ?? 0) + 1);
    for (const child of node.children ?? []) walkFunctions(child);
    open.set(key, open.get(key)! - 1);
  };
  walkFunctions(root.id);

  const flameOf = (ids: number[], depth: number): FlameNode[] => {
    const merged = new Map<string, { d: ReturnType<typeof describe>; v: number; s: number; kids: number[] }>();
    for (const id of ids) {
      const node = byId.get(id)!;
      const d = describe(node.callFrame);
      const key = `${d.name}\u0000${d.file}\u0000${d.line}`;
      const m = merged.get(key) ?? { d, v: 0, s: 0, kids: [] };
      m.v += totals.get(id) ?? 0;
      m.s += self.get(id) ?? 0;
      m.kids.push(...(node.children ?? []));
      merged.set(key, m);
    }
    return [...merged.values()]
      .filter((m) => m.v >= all * FLAME_MIN_SHARE)
      .sort((a, b) => b.v - a.v)
      .map((m) => {
        const f: FlameNode = { n: m.d.name, f: m.d.file, l: m.d.line, k: m.d.kind, v: round(m.v), s: round(m.s) };
        if (depth < 64 && m.kids.length > 0) {
          const c = flameOf(m.kids, depth + 1);
          if (c.length > 0) f.c = c;
        }
        return f;
      });
  };

  data.samples = samples.length;
  data.duration = round((profile.endTime - profile.startTime) / 1000);
  data.interval = samples.length > 1 ? round(deltas.slice(1).reduce((a, b) => a + b, 0) / (samples.length - 1) / 1000) : undefined;
  data.functions = [...functions.values()]
    .filter((f) => f.name !== '(root)')
    .map((f) => ({ ...f, self: round(f.self), total: round(f.total) }))
    .sort((a, b) => b.self - a.self || b.total - a.total)
    .slice(0, TOP_FUNCTIONS);
  data.flame = flameOf([root.id], 0)[0];
  if (blocks !== undefined && cpu.origin !== undefined) data.held = heldStacks(profile, byId, blocks, cpu.origin);
  return data;
}

const MAX_STACK = 16;

/**
 * The stack sampled most while each stretch ran: the code that held the loop. A sample's time is
 * the profile's start plus the deltas before it, on the clock whose reading at the request's
 * arrival was `origin` (µs).
 */
function heldStacks(profile: CpuProfile, byId: Map<number, ProfileNode>, blocks: { start: number; duration: number }[], origin: number): NonNullable<CpuData['held']> {
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  const held: NonNullable<CpuData['held']> = [];
  for (const block of blocks) {
    const from = origin + block.start * 1000 - profile.startTime;
    const to = from + block.duration * 1000;
    const seen = new Map<number, number>();
    let t = 0;
    for (let i = 0; i < samples.length; i++) {
      t += deltas[i] ?? 0;
      // Ticks V8 gives no JavaScript frame ((program), (garbage collector)) say nothing of what the app ran.
      if (t >= from && t <= to && !isV8Frame(byId.get(samples[i])!.callFrame)) seen.set(samples[i], (seen.get(samples[i]) ?? 0) + 1);
    }
    let top: number | undefined;
    for (const [id, n] of seen) if (top === undefined || n > seen.get(top)! || (n === seen.get(top) && id > top)) top = id;
    if (top === undefined) continue;
    // Up to the end of the app's innermost frames: what called those is the router's, the same for every request.
    const stack: Omit<CpuFunction, 'self' | 'total'>[] = [];
    let inApp = false;
    for (let id: number | undefined = top; id !== undefined && stack.length < MAX_STACK; id = parent.get(id)) {
      const d = describe(byId.get(id)!.callFrame);
      if (d.kind === 'v8') continue;
      if (inApp && d.kind !== 'app') break;
      inApp ||= d.kind === 'app';
      stack.push(d);
    }
    if (stack.length > 0) held.push({ start: block.start, stack });
  }
  return held;
}

export const cpu: CorePanel<CpuData> = {
  id: 'cpu',
  title: 'CPU profile',
  collect: (s) => (s.cpu === undefined ? undefined : cpuData(s.cpu, s.loop?.blocks)),
  badge: (data) => (data.busy ? 'busy' : data.samples === undefined ? undefined : `${data.samples} samples`),
};
