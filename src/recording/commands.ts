import type { WorkContext } from './context.js';
import { callerFrame } from './caller.js';
import { insideOf, MAX_CALLERS, MAX_QUERIES, sinceStart } from './inside.js';

/** What a reply held, read as it arrives (the reply itself is not kept): enough to tell a hit from a miss. */
export interface ReplyShape {
  /** Roughly its bytes. */
  size: number;
  /** An integer reply's value (EXISTS, DEL, INCR…). */
  int?: number;
  /** An array's or map's entries, and how many of them were nil (MGET's misses). */
  items?: number;
  nils?: number;
  /** The reply was nil. */
  nil?: true;
}

/** One command a Redis client sent for the request, or a pipeline / MULTI as one entry with its commands. Times are ms since arrival. */
export interface CommandEntry {
  client: string;
  /** As the client names it (ioredis: `get`; node-redis: `GET`); `pipeline` or `multi` for a batch. */
  command: string;
  /** As the client gave them: the channels' are sanitised already (values as `?`); the writer sanitises the rest the same way. */
  args: unknown[];
  start: number;
  end: number;
  reply: ReplyShape | undefined;
  error: unknown;
  caller: string | undefined;
  /** A batch's commands, as far as the client tells them; `size` is how many it sent. */
  commands?: CommandEntry[];
  size?: number;
}

/** The batch whose exec() is running: commands sent meanwhile, on its stack, are its own. */
let openBatch: { ctx: WorkContext; entry: CommandEntry } | undefined;

/** A command starts: returns its entry, or undefined when the request keeps no more. */
export function commandStarted(ctx: WorkContext, client: string, command: string, args: unknown[]): CommandEntry | undefined {
  const batch = openBatch?.ctx === ctx ? openBatch.entry : undefined;
  const entry: CommandEntry = { client, command, args, start: sinceStart(ctx), end: -1, reply: undefined, error: undefined, caller: undefined };
  if (batch !== undefined) {
    if (batch.commands!.length >= MAX_QUERIES) return undefined;
    batch.commands!.push(entry);
    return entry;
  }
  const inside = insideOf(ctx);
  inside.commandCount++;
  if (inside.commands.length >= MAX_QUERIES) return undefined;
  if (inside.commands.length < MAX_CALLERS) entry.caller = callerFrame();
  inside.commands.push(entry);
  return entry;
}

export function commandEnded(ctx: WorkContext, entry: CommandEntry | undefined, reply: unknown, error: unknown): void {
  if (entry === undefined || entry.end >= 0) return;
  entry.end = sinceStart(ctx);
  if (error !== undefined && error !== null) entry.error = error;
  else entry.reply = shapeOf(reply);
}

/**
 * A pipeline or MULTI starts: commands sent until opened() is called (its exec's synchronous
 * part) belong to it. Returns the batch's entry, to end with commandEnded, and the close of the
 * window; nothing inside another batch (MULTI runs through a pipeline's exec).
 */
export function batchStarted(ctx: WorkContext, client: string, mode: 'pipeline' | 'multi', size?: number): { entry: CommandEntry | undefined; opened: () => void } {
  if (openBatch !== undefined) return { entry: undefined, opened: () => {} };
  const entry = commandStarted(ctx, client, mode, []);
  if (entry === undefined) return { entry, opened: () => {} };
  entry.commands = [];
  if (size !== undefined) entry.size = size;
  const batch = (openBatch = { ctx, entry });
  return {
    entry,
    opened: () => {
      if (openBatch === batch) openBatch = undefined;
    },
  };
}

/** A batch whose exec sent nothing (a MULTI's first exec only prepares it): it is no entry. */
export function batchSentNothing(ctx: WorkContext, entry: CommandEntry | undefined): boolean {
  if (entry === undefined || (entry.commands?.length ?? 0) > 0) return false;
  const inside = insideOf(ctx);
  const at = inside.commands.indexOf(entry);
  if (at >= 0) {
    inside.commands.splice(at, 1);
    inside.commandCount--;
  }
  return true;
}

/**
 * A batch has answered: its commands take their replies from its own (a MULTI's commands were
 * answered QUEUED; `pairs` for ioredis, whose replies are [error, value] pairs), and MULTI and EXEC
 * are left out of its commands (the batch says it).
 */
export function batchEnded(ctx: WorkContext, entry: CommandEntry | undefined, replies: unknown, error: unknown, pairs: boolean): void {
  if (entry === undefined || entry.end >= 0) return;
  const now = sinceStart(ctx);
  const commands = (entry.commands ?? []).filter((c) => !/^(multi|exec)$/i.test(c.command));
  commands.forEach((command, i) => {
    const reply = Array.isArray(replies) ? replies[i] : undefined;
    const [failed, value] = pairs && Array.isArray(reply) ? reply : [undefined, reply];
    if (command.end < 0) command.end = now;
    if (reply === undefined && !Array.isArray(replies)) {
      if (command.reply === undefined && command.error === undefined) command.error = error;
      return;
    }
    command.error = failed ?? undefined;
    command.reply = failed ? undefined : shapeOf(value);
  });
  entry.commands = commands;
  entry.end = now;
  if (error !== undefined && error !== null) entry.error = error;
  else entry.reply = { size: commands.reduce((sum, c) => sum + (c.reply?.size ?? 0), 0), items: Array.isArray(replies) ? replies.length : commands.length };
}

const MAX_ITEMS = 1000;

function sizeOf(value: unknown): number {
  if (typeof value === 'string') return value.length;
  if (value instanceof Uint8Array) return value.byteLength;
  if (typeof value === 'number' || typeof value === 'bigint') return 8;
  return 0;
}

/** What a reply held, walked no deeper than one level and no further than MAX_ITEMS entries. */
export function shapeOf(reply: unknown): ReplyShape {
  if (reply === null || reply === undefined) return { size: 0, nil: true };
  if (typeof reply === 'number') return Number.isInteger(reply) ? { size: 8, int: reply } : { size: 8 };
  if (typeof reply !== 'object' || reply instanceof Uint8Array) return { size: sizeOf(reply) };
  const values = Array.isArray(reply) ? reply : reply instanceof Map ? [...reply.keys(), ...reply.values()] : Object.values(reply).concat(Object.keys(reply));
  let size = 0;
  let nils = 0;
  for (let i = 0; i < values.length && i < MAX_ITEMS; i++) {
    if (values[i] === null) nils++;
    else size += sizeOf(values[i]);
  }
  const items = Array.isArray(reply) ? reply.length : reply instanceof Map ? reply.size : values.length / 2;
  return nils > 0 ? { size, items, nils } : { size, items };
}
