import { runAs, type RecorderSettings, type WorkContext } from '../recording/context.js';
import { commandFinished, commandStarted } from '../recording/command.js';
import { insideOf, MAX_QUERIES, requestOf, sinceStart, type QueuedJob } from '../recording/inside.js';
import { callerFrame } from '../recording/caller.js';
import { isToken } from '../recording/token.js';
import type { DriverAdapter } from './driver.js';

/** BullMQ's SpanKind (its enums): the only two this follows. */
const PRODUCER = 3;
const CONSUMER = 4;

/** What the profiler passes through BullMQ as its "context": the unit of work running, or the parent a job names. */
interface Carried {
  work?: WorkContext;
  /** A job's own command, which `with` runs its processor in. */
  job?: WorkContext;
  parent?: string;
}

type Attributes = Record<string, unknown>;

const NOOP_SPAN = {
  setSpanOnContext: (ctx: Carried) => ctx,
  setAttribute() {},
  setAttributes() {},
  addEvent() {},
  recordException() {},
  end() {},
};

/**
 * BullMQ's `telemetry` option (`new Queue(name, { telemetry })`, `new Worker(name, fn, { telemetry })`),
 * spoken by the profiler: a job added during a request carries the request's token (BullMQ
 * stores it as `job.opts.telemetry.metadata`) and shows on its timeline; each job a worker
 * processes runs as a command profile of its own (`JOB`), linked back to that token, with what
 * its processor does inside it.
 */
export function bullmqTelemetry(settings: RecorderSettings, nextToken: () => string) {
  return {
    tracer: {
      startSpan(name: string, options?: { kind?: number }, ctx?: Carried) {
        try {
          if (options?.kind === CONSUMER) return jobSpan(settings, nextToken(), name, ctx?.parent ?? null);
          if (options?.kind === PRODUCER) return queuedSpan(name);
        } catch (err) {
          settings.failed(err);
        }
        return NOOP_SPAN;
      },
    },
    contextManager: {
      active: (): Carried => ({ work: requestOf() }),
      root: (): Carried => ({}),
      with<A extends (...args: unknown[]) => unknown>(ctx: Carried, fn: A): ReturnType<A> {
        return (ctx?.job === undefined ? fn() : runAs(ctx.job, fn)) as ReturnType<A>;
      },
      getMetadata: (ctx: Carried): string => ctx?.work?.token ?? '',
      fromMetadata: (_active: Carried, metadata: string): Carried => (isToken(metadata) ? { parent: metadata } : {}),
    },
  };
}

/** A worker processes a job: its command, from BullMQ's `process <queue>` span to that span's end. */
function jobSpan(settings: RecorderSettings, token: string, name: string, parent: string | null) {
  const queue = name.replace(/^process /, '');
  const ctx = commandStarted(settings, token, { name: queue, kind: 'job', parent }, { job: { queue } });
  const job = ctx.command!.job!;
  const named = () => {
    ctx.command!.name = `${queue}:${job.name ?? '?'}${job.id === undefined ? '' : ` #${job.id}`}`;
  };
  const take = (attributes: Attributes) => {
    const id = attributes['bullmq.job.id'];
    const jobName = attributes['bullmq.job.name'];
    if (id !== undefined) job.id = String(id);
    if (jobName !== undefined) job.name = String(jobName);
    if (id !== undefined || jobName !== undefined) named();
  };
  return {
    setSpanOnContext: (): Carried => ({ work: ctx, job: ctx }),
    setAttribute: (key: string, value: unknown) => take({ [key]: value }),
    setAttributes: take,
    addEvent(event: string, attributes?: Attributes) {
      if (event !== 'job failed') return;
      const reason = attributes?.['bullmq.job.failed.reason'];
      job.failedReason = reason === undefined ? 'failed' : String(reason);
      ctx.command!.exitCode = 1;
    },
    recordException(err: unknown) {
      if (ctx.error === undefined) ctx.error = err;
    },
    end: () => commandFinished(ctx),
  };
}

/** A job added (`add <queue>.<name>`, `addBulk <queue>`): an entry on the timeline of the request or command adding it. */
function queuedSpan(name: string) {
  const ctx = requestOf();
  if (ctx === undefined) return NOOP_SPAN;
  const inside = insideOf(ctx);
  if (inside.queued.length >= MAX_QUERIES) return NOOP_SPAN;
  const [operation, target = ''] = name.split(' ');
  const dot = target.indexOf('.');
  const entry: QueuedJob = {
    queue: operation === 'add' && dot > 0 ? target.slice(0, dot) : target,
    name: operation === 'add' && dot > 0 ? target.slice(dot + 1) : undefined,
    ids: [],
    start: sinceStart(ctx),
    end: -1,
    caller: callerFrame(),
    error: undefined,
  };
  inside.queued.push(entry);
  const take = (attributes: Attributes) => {
    const id = attributes['bullmq.job.id'];
    if (id !== undefined) entry.ids.push(String(id));
    const names = attributes['bullmq.job.bulk.names'];
    if (Array.isArray(names)) entry.name = names.map(String).join(', ');
  };
  return {
    setSpanOnContext: (given: Carried): Carried => given,
    setAttribute: (key: string, value: unknown) => take({ [key]: value }),
    setAttributes: take,
    addEvent() {},
    recordException(err: unknown) {
      entry.error = err;
    },
    end() {
      entry.end = sinceStart(ctx);
    },
  };
}

interface WorkerProto {
  callProcessJob(this: unknown, job: unknown, ...rest: unknown[]): unknown;
}

const hooked = new WeakSet<object>();

/**
 * The processor's own error and the job's attempt, which BullMQ's telemetry does not give (it
 * catches the error and reports its message only): Worker#callProcessJob, which runs the
 * processor, seen from outside. Its result and its error pass on untouched.
 */
function hookWorker(Worker: unknown): void {
  const proto = (Worker as { prototype?: WorkerProto } | undefined)?.prototype;
  if (proto === undefined || typeof proto.callProcessJob !== 'function' || hooked.has(proto)) return;
  hooked.add(proto);
  const call = proto.callProcessJob;
  proto.callProcessJob = function (this: unknown, job: unknown, ...rest: unknown[]) {
    const ctx = requestOf();
    const state = ctx?.command?.job;
    if (ctx === undefined || state === undefined) return call.call(this, job, ...rest);
    const j = job as { attemptsMade?: number; attemptsStarted?: number; opts?: { attempts?: number } };
    state.attempt = Math.max(j.attemptsStarted ?? 0, (j.attemptsMade ?? 0) + 1);
    if (typeof j.opts?.attempts === 'number') state.attempts = j.opts.attempts;
    const failed = (err: unknown) => {
      if (ctx.error === undefined) ctx.error = err;
      throw err;
    };
    try {
      const result = call.call(this, job, ...rest);
      return result !== null && typeof (result as { then?: unknown })?.then === 'function' ? (result as Promise<unknown>).then(undefined, failed) : result;
    } catch (err) {
      return failed(err);
    }
  };
}

/** BullMQ ships its ES-module build for bundlers only (no `exports`): Node runs its CommonJS copy, whatever the app's module system. */
export const bullmq: DriverAdapter = {
  name: 'bullmq',
  panel: 'jobs',
  main: /[\\/]node_modules[\\/]bullmq[\\/]dist[\\/]cjs[\\/]classes[\\/]worker\.js$/,
  matches: (loaded) => typeof (loaded as { Worker?: { prototype?: { callProcessJob?: unknown } } })?.Worker?.prototype?.callProcessJob === 'function',
  hook: (loaded) => hookWorker((loaded as { Worker: unknown }).Worker),
};
