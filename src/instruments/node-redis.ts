import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { batchEnded, batchStarted, commandEnded, commandStarted } from '../recording/commands.js';
import { requestOf } from '../recording/inside.js';
import { ownerOf, type DriverAdapter } from './driver.js';
import { subscribeRedisChannels } from './redis-channels.js';

type Load = (file: string) => { default?: { prototype: object } };

/**
 * node-redis (`redis`, `@redis/client`). From 5.12 the client publishes commands and batches on
 * `node-redis:command` and `node-redis:batch` (a MULTI's commands are not published one by one:
 * it shows as one entry with their number). Before (4.x, which apps lock), every command goes
 * through its commands queue's addCommand on the app's call, its promise awaited by the client
 * (so following it changes nothing the app sees), and a pipeline or MULTI through multiExecutor.
 */
export const nodeRedis: DriverAdapter = {
  name: 'redis',
  panel: 'cache',
  main: /[\\/]node_modules[\\/]@redis[\\/]client[\\/]dist[\\/]index\.js$/,
  matches: (loaded) => typeof (loaded as { createClient?: unknown })?.createClient === 'function' && typeof (loaded as { createCluster?: unknown }).createCluster === 'function',
  hook(_loaded, file, tell) {
    const dir = file && path.join(path.dirname(file), 'lib', 'client');
    if (dir === undefined) {
      tell('redis: a copy given to instrument() without its file cannot be recorded; node-redis 5.12 and later is recorded with no setup');
      return;
    }
    if (existsSync(path.join(dir, 'tracing.js'))) {
      subscribeRedisChannels('node-redis', 'node-redis', { pairs: false, nameFirst: true, batches: true });
      return;
    }
    const load = createRequire(file!) as unknown as Load;
    const queue = ownerOf(load(path.join(dir, 'commands-queue.js')).default?.prototype, 'addCommand');
    const client = ownerOf(load(path.join(dir, 'index.js')).default?.prototype, 'multiExecutor');
    if (queue === undefined || typeof queue.addCommand !== 'function') {
      tell(`redis at ${file}: its commands queue was not found, so its commands are not recorded; node-redis 5.12 and later is recorded through its tracing channels`);
      return;
    }
    hookQueue(queue);
    if (client !== undefined) hookBatches(client);
  },
};

const hooked = new WeakSet<object>();

function hookQueue(queue: Record<string | symbol, unknown>): void {
  if (hooked.has(queue)) return;
  hooked.add(queue);
  const addCommand = queue.addCommand as (this: unknown, args: unknown[], ...rest: unknown[]) => Promise<unknown>;
  queue.addCommand = function (this: unknown, args: unknown[], ...rest: unknown[]) {
    const promise = addCommand.call(this, args, ...rest);
    try {
      const ctx = requestOf();
      const entry = ctx && Array.isArray(args) ? commandStarted(ctx, 'node-redis', String(args[0]).toUpperCase(), args.slice(1)) : undefined;
      if (entry !== undefined) promise.then((reply) => commandEnded(ctx!, entry, reply, undefined), (err: unknown) => commandEnded(ctx!, entry, undefined, err));
    } catch {
      // The command runs unrecorded.
    }
    return promise;
  };
}

function hookBatches(client: Record<string | symbol, unknown>): void {
  if (hooked.has(client)) return;
  hooked.add(client);
  const multiExecutor = client.multiExecutor as (this: unknown, commands: unknown, selectedDB: unknown, chainId?: unknown) => Promise<unknown>;
  client.multiExecutor = function (this: unknown, commands: unknown, selectedDB: unknown, chainId?: unknown) {
    const ctx = requestOf();
    if (ctx === undefined) return multiExecutor.call(this, commands, selectedDB, chainId);
    // A chain id makes it a MULTI: its replies are EXEC's, the last of MULTI, the commands' QUEUED, EXEC.
    const batch = batchStarted(ctx, 'node-redis', chainId ? 'multi' : 'pipeline');
    let promise: Promise<unknown>;
    try {
      promise = multiExecutor.call(this, commands, selectedDB, chainId);
    } finally {
      batch.opened();
    }
    promise.then(
      (replies) => batchEnded(ctx, batch.entry, chainId && Array.isArray(replies) ? replies[replies.length - 1] : replies, undefined, false),
      (err: unknown) => batchEnded(ctx, batch.entry, undefined, err, false),
    );
    return promise;
  };
}
