import type { CapturedCommand, ErrorSummary } from '../recording/inside-capture.js';
import type { CorePanel } from './collector.js';
import { duration, layerAt } from './inside-layers.js';
import { keysOf, lookups } from '../redaction/cache-reads.js';

export interface CommandData {
  client: string;
  /** As the client names it; `pipeline` or `multi` for a batch. */
  command: string;
  keys: string[];
  args: string[];
  start: number;
  duration: number;
  /** For reads: whether the key (all of them, for MGET) held a value. */
  hit?: boolean;
  /** The reply's size in bytes, roughly. */
  size?: number;
  error?: ErrorSummary;
  caller?: string;
  layer?: string;
  /** A batch's commands, or how many it sent when the client does not say which. */
  commands?: CommandData[];
  sent?: number;
}

export interface CacheData {
  count: number;
  hits: number;
  misses: number;
  /** Milliseconds. */
  time: number;
  errors: number;
  commands: CommandData[];
  omitted: number;
  /** Keys read more than once in the request, most first. */
  repeated: { key: string; reads: number }[];
}

function commandData(c: CapturedCommand, spans: Parameters<typeof layerAt>[0], totals: { hits: number; misses: number; errors: number }, reads: Map<string, number>): CommandData {
  const keys = keysOf(c.command, c.args);
  const data: CommandData = { client: c.client, command: c.command, keys, args: c.args, start: c.start, duration: duration(c.start, c.end) };
  const found = lookups(c, keys);
  if (found !== undefined) {
    data.hit = found.misses === 0;
    totals.hits += found.hits;
    totals.misses += found.misses;
    for (const key of keys) reads.set(key, (reads.get(key) ?? 0) + 1);
  }
  if (c.reply !== undefined) data.size = c.reply.size;
  if (c.error !== undefined) {
    data.error = c.error;
    totals.errors++;
  }
  if (c.caller !== undefined) data.caller = c.caller;
  const layer = layerAt(spans, c.start);
  if (layer !== undefined) data.layer = layer;
  if (c.commands !== undefined) data.commands = c.commands.map((inner) => commandData(inner, spans, totals, reads));
  if (c.size !== undefined) data.sent = c.size;
  return data;
}

export const cache: CorePanel<CacheData> = {
  id: 'cache',
  title: 'Cache',
  collect(s) {
    const recorded = s.inside?.commands;
    if (recorded === undefined || recorded.length === 0) return undefined;
    const totals = { hits: 0, misses: 0, errors: 0 };
    const reads = new Map<string, number>();
    let time = 0;
    const commands = recorded.map((c) => {
      const data = commandData(c, s.spans, totals, reads);
      time += data.duration;
      return data;
    });
    const repeated = [...reads].filter(([, n]) => n > 1).sort((a, b) => b[1] - a[1]).slice(0, 20).map(([key, n]) => ({ key, reads: n }));
    const count = s.inside!.commandCount ?? commands.length;
    return { count, ...totals, time: Math.round(time * 1000) / 1000, commands, omitted: count - commands.length, repeated };
  },
  badge: (data) => data.count,
};
