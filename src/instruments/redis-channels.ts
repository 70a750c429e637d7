import dc from 'node:diagnostics_channel';
import type { WorkContext } from '../recording/context.js';
import { batchEnded, batchStarted, commandEnded, commandStarted, type CommandEntry } from '../recording/commands.js';
import { requestOf } from '../recording/inside.js';

/** What the Redis clients publish on their tracing channels (ioredis ≥ 5.11, @redis/client ≥ 5.12). */
interface Traced {
  command?: string;
  args?: unknown[];
  batchMode?: string;
  batchSize?: number;
  result?: unknown;
  error?: unknown;
}

const subscribed = new Set<string>();

/**
 * Subscribe, once per client, to `<prefix>:command` and `<prefix>:batch`. A command starts in the
 * app's call and ends on its reply (asyncEnd: a promise's `end` comes before the reply); a batch
 * owns the commands sent while its exec runs (start to end). The clients sanitise the arguments
 * themselves (values past the key read `?`). `pairs`: the batch's replies are [error, value] pairs;
 * `nameFirst`: the arguments start with the command's name (node-redis); `batches`: follow the
 * batch channel (ioredis publishes MULTI there after it has sent its commands: it is followed at
 * its Pipeline#exec instead).
 */
export function subscribeRedisChannels(client: string, prefix: string, { pairs, nameFirst, batches }: { pairs: boolean; nameFirst: boolean; batches: boolean }, sentFrom?: (message: object) => WorkContext | null | undefined): void {
  if (subscribed.has(prefix) || typeof dc.tracingChannel !== 'function') return;
  subscribed.add(prefix);
  const open = new WeakMap<object, { ctx: WorkContext; entry: CommandEntry | undefined; opened?: () => void }>();
  const ended = (message: Traced, batch: boolean) => {
    const call = open.get(message);
    if (call === undefined) return;
    open.delete(message);
    call.opened?.();
    if (batch) batchEnded(call.ctx, call.entry, message.result, message.error, pairs);
    else commandEnded(call.ctx, call.entry, message.result, message.error);
  };
  dc.tracingChannel(`${prefix}:command`).subscribe({
    start(message) {
      // What a subscriber throws, Node rethrows as an uncaught exception: nothing here may throw.
      try {
        // A command the client kept until its connection was ready is written outside the work that sent it (see ioredis.ts).
        const sent = sentFrom?.(message as object);
        const ctx = sent === undefined ? requestOf() : (sent ?? undefined);
        const m = message as Traced;
        if (ctx === undefined) return;
        const args = Array.isArray(m.args) ? (nameFirst ? m.args.slice(1) : m.args) : [];
        open.set(m, { ctx, entry: commandStarted(ctx, client, String(m.command), args) });
      } catch {
        // The command runs unrecorded.
      }
    },
    end(message) {
      if ((message as Traced).error !== undefined) ended(message as Traced, false);
    },
    asyncStart() {},
    asyncEnd: (message) => ended(message as Traced, false),
    error() {},
  });
  if (!batches) return;
  dc.tracingChannel(`${prefix}:batch`).subscribe({
    start(message) {
      try {
        const ctx = requestOf();
        const m = message as Traced;
        if (ctx === undefined) return;
        const mode = String(m.batchMode).toUpperCase() === 'PIPELINE' ? 'pipeline' : 'multi';
        open.set(m, { ctx, ...batchStarted(ctx, client, mode, typeof m.batchSize === 'number' ? m.batchSize : undefined) });
      } catch {
        // Unrecorded.
      }
    },
    end(message) {
      const call = open.get(message as object);
      call?.opened?.();
      if ((message as Traced).error !== undefined) ended(message as Traced, true);
    },
    asyncStart() {},
    asyncEnd: (message) => ended(message as Traced, true),
    error() {},
  });
}
