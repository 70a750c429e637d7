import { performance } from 'node:perf_hooks';
import { currentContext, runAs, type RecorderSettings, type WorkContext } from './context.js';
import { stopCpu } from './cpu.js';
import { whenSettled } from './settled.js';
import { loopFinished, loopStarted } from './loop.js';
import { activeTrace } from './trace.js';

/** How a command came to run: profiler.run(), a script run with the register hook, a queued job. */
export type CommandKind = 'run' | 'script' | 'job';

/** What a command is, beside what it records as a request would: see WorkContext.command. */
export interface CommandState {
  kind: CommandKind;
  name: string;
  /** A script's arguments, as the process got them (redacted when stored). */
  argv?: string[];
  /** 0 when it ran to its end, 1 when it threw; a script's own exit code. */
  exitCode: number | undefined;
  /** The signal that ended a script. */
  signal?: string;
  /** A queued job: its queue, id, name and which attempt this is (1 for the first). */
  job?: { queue: string; id?: string; name?: string; attempt?: number; attempts?: number; failedReason?: string };
}

export interface CommandOptions {
  name: string;
  kind?: CommandKind;
  /** The profile this one belongs to: by default, the request or command running where it starts. */
  parent?: string | null;
}

/** A command's context, made the way the recorder makes a request's. */
export function commandStarted(recorder: RecorderSettings, token: string, options: CommandOptions, state?: Partial<CommandState>): WorkContext {
  const parent = options.parent !== undefined ? options.parent : (currentContext()?.token ?? null);
  const ctx: WorkContext = {
    recorder,
    token,
    parent,
    time: Date.now(),
    start: performance.now(),
    ttfb: -1,
    end: -1,
    logs: [],
    logsDropped: 0,
    error: undefined,
    described: undefined,
    log: undefined,
    cpu: undefined,
    inside: undefined,
    trace: activeTrace(),
    command: { kind: options.kind ?? 'run', name: String(options.name), exitCode: undefined, ...state },
    loop: undefined,
    checks: undefined,
    dumps: undefined,
    translations: undefined,
  };
  loopStarted(ctx);
  return ctx;
}

/** The command has ended (with `error` when it threw): it is handed to storage, once. */
export function commandFinished(ctx: WorkContext, error?: unknown, exitCode?: number): void {
  if (ctx.end >= 0) return;
  try {
    ctx.end = performance.now() - ctx.start;
    ctx.ttfb = ctx.end;
    if (error !== undefined) ctx.error = error;
    const command = ctx.command!;
    command.exitCode = exitCode ?? command.exitCode ?? (ctx.error === undefined ? 0 : 1);
    if (ctx.cpu !== undefined) stopCpu(ctx);
    loopFinished(ctx);
    ctx.recorder.commandDone(ctx);
  } catch (err) {
    ctx.recorder.failed(err);
  }
}

/**
 * Runs fn as the command ctx: what it does, across its awaits, is recorded in ctx. Returns what fn
 * returns (for a promise, one that settles as fn's does) and passes its error on untouched.
 */
export function runCommand<T>(ctx: WorkContext, fn: () => T): T {
  return whenSettled(() => runAs(ctx, fn), (failed, err) => (failed ? commandFinished(ctx, err, 1) : commandFinished(ctx)));
}
