import { createRequire } from 'node:module';
import path from 'node:path';
import { batchEnded, batchSentNothing, batchStarted, commandEnded, commandStarted } from '../recording/commands.js';
import { requestOf } from '../recording/inside.js';
import type { WorkContext } from '../recording/context.js';
import { ownerOf, type DriverAdapter } from './driver.js';
import { subscribeRedisChannels } from './redis-channels.js';

interface Command {
  name: string;
  args: unknown[];
  resolve: (value: unknown) => unknown;
  reject: (err: unknown) => unknown;
}
interface Pipeline {
  _queue?: Command[];
  resolve: (value: unknown) => unknown;
  reject: (err: unknown) => unknown;
}
type Module = { prototype?: object; Pipeline?: { prototype: object } };

const sent = new WeakSet<object>();
const hooked = new WeakSet<object>();

/**
 * ioredis ≥ 5.11 publishes commands and MULTI on `ioredis:command` and `ioredis:batch`; a plain
 * pipeline is not a batch there, so Pipeline#exec is followed on every version: commands it sends
 * are its own. Before 5.11 (4.x, which apps lock), each command is followed where
 * Redis#sendCommand takes it, ended where the reply resolves it (its promise is left alone, so an
 * unhandled rejection stays the app's).
 */
export const ioredis: DriverAdapter = {
  name: 'ioredis',
  panel: 'cache',
  main: /[\\/]node_modules[\\/]ioredis[^\\/]*[\\/]built[\\/]index\.js$/,
  matches: (loaded) => typeof (loaded as Module)?.Pipeline?.prototype === 'object' && typeof ownerOf((loaded as Module).prototype, 'sendCommand')?.sendCommand === 'function',
  hook(loaded, file, tell) {
    const redis = ownerOf((loaded as Module).prototype, 'sendCommand');
    if (redis === undefined) return;
    if (typeof redis._buildCommandContext === 'function') {
      subscribeRedisChannels('ioredis', 'ioredis', { pairs: true, nameFirst: false, batches: false }, sentFrom);
      hookOfflineQueue(redis);
    } else if (!hooked.has(redis)) {
      hooked.add(redis);
      const sendCommand = redis.sendCommand as (this: unknown, command: Command, ...rest: unknown[]) => unknown;
      redis.sendCommand = function (this: unknown, command: Command, ...rest: unknown[]) {
        follow(command);
        return sendCommand.call(this, command, ...rest);
      };
    }
    hookPipeline((loaded as Module).Pipeline?.prototype ?? pipelineOf(file), tell);
  },
};

/** Each command's unit of work as the app sent it (null: none), for ioredis ≥ 5.11, which publishes a command only as it is written. */
const sentIn = new WeakMap<object, WorkContext | null>();
/** The traced message of a command written, to the unit of work it was sent in. */
const traced = new WeakMap<object, WorkContext | null>();

/** The unit of work a traced message's command was sent in, when it was seen being sent: else the running one is asked for. */
const sentFrom = (message: object): WorkContext | null | undefined => traced.get(message);

/**
 * A command sent before the connection is ready (the first requests after a start, a reconnect)
 * waits in ioredis's offline queue and is written, and published, when the queue is flushed, in
 * the connection's own context: the unit of work that sent it is kept with it at its first send,
 * and given to the message ioredis builds for it when it is written.
 */
function hookOfflineQueue(redis: Record<string, unknown>): void {
  if (hooked.has(redis)) return;
  hooked.add(redis);
  const sendCommand = redis.sendCommand as (this: unknown, command: object, ...rest: unknown[]) => unknown;
  const build = redis._buildCommandContext as (this: unknown, command: object) => object;
  redis.sendCommand = function (this: unknown, command: object, ...rest: unknown[]) {
    if (command !== null && typeof command === 'object' && !sentIn.has(command)) sentIn.set(command, requestOf() ?? null);
    return sendCommand.call(this, command, ...rest);
  };
  redis._buildCommandContext = function (this: unknown, command: object) {
    const message = build.call(this, command);
    const ctx = sentIn.get(command);
    if (ctx !== undefined && message !== null && typeof message === 'object') traced.set(message, ctx);
    return message;
  };
}

/** A command seen once (ioredis sends one again after a reconnect): its reply ends it. */
function follow(command: Command): void {
  try {
    if (command === null || typeof command !== 'object' || sent.has(command)) return;
    sent.add(command);
    const ctx = requestOf();
    if (ctx === undefined) return;
    const entry = commandStarted(ctx, 'ioredis', String(command.name), Array.isArray(command.args) ? command.args : []);
    if (entry === undefined) return;
    const { resolve, reject } = command;
    command.resolve = (value) => {
      commandEnded(ctx, entry, value, undefined);
      return resolve(value);
    };
    command.reject = (err) => {
      commandEnded(ctx, entry, undefined, err);
      return reject(err);
    };
  } catch {
    // The command runs unrecorded.
  }
}

function pipelineOf(file: string | undefined): object | undefined {
  if (file === undefined) return undefined;
  try {
    return (createRequire(file)(path.join(path.dirname(file), 'Pipeline.js')) as { default?: { prototype: object } }).default?.prototype;
  } catch {
    return undefined;
  }
}

function hookPipeline(proto: object | undefined, tell: (message: string) => void): void {
  const owner = ownerOf(proto, 'exec');
  if (owner === undefined || typeof owner.exec !== 'function') {
    tell('ioredis: its Pipeline#exec was not found, so pipelines show as separate commands');
    return;
  }
  if (hooked.has(owner)) return;
  hooked.add(owner);
  const exec = owner.exec as (this: Pipeline, ...args: unknown[]) => unknown;
  owner.exec = function (this: Pipeline, ...args: unknown[]) {
    const ctx = sent.has(this) ? undefined : requestOf();
    if (ctx === undefined) return exec.apply(this, args);
    const multi = this._queue?.[0]?.name === 'multi';
    const batch = batchStarted(ctx, 'ioredis', multi ? 'multi' : 'pipeline');
    try {
      return exec.apply(this, args);
    } finally {
      batch.opened();
      // A MULTI's exec runs twice: the first sends nothing.
      if (batch.entry !== undefined && !batchSentNothing(ctx, batch.entry)) {
        sent.add(this);
        const { resolve, reject } = this;
        // A MULTI's replies are EXEC's: the values of its commands, in order.
        this.resolve = (value) => {
          const replies = multi && Array.isArray(value) ? (value[value.length - 1] as unknown[] | undefined)?.[1] : value;
          batchEnded(ctx, batch.entry, replies, undefined, !multi);
          return resolve(value);
        };
        this.reject = (err) => {
          batchEnded(ctx, batch.entry, undefined, err, !multi);
          return reject(err);
        };
      }
    }
  };
}
