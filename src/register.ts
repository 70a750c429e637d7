// `node --import express-web-profiler/register script.js` (or `--require` for CommonJS): the whole
// process recorded as one command profile, in the store the app's profiler uses (WEB_PROFILER_DB,
// else storage/profiler.sqlite under the working directory), written as the process exits.
import path from 'node:path';
import { setProcessWork } from './recording/context.js';
import { commandFinished, commandStarted } from './recording/command.js';
import { startCpu } from './recording/cpu.js';
import { kCommands, webProfiler, type WebProfiler } from './profiler.js';

const SIGNALS = { SIGINT: 2, SIGTERM: 15 } as const;

/** The script's profiler: `scriptProfiler.run(...)` records parts of it as commands of their own. Undefined where the profiler is off (production). */
export const scriptProfiler: WebProfiler | undefined = recordScript();

function recordScript(): WebProfiler | undefined {
  const profiler = webProfiler();
  const recording = profiler[kCommands];
  if (recording === undefined) return undefined;
  const { settings, nextToken } = recording;
  const script = process.argv[1] === undefined ? '(stdin)' : path.relative(process.cwd(), process.argv[1]) || process.argv[1];
  const ctx = commandStarted(settings, nextToken(), { name: script, kind: 'script', parent: process.env.WEB_PROFILER_PARENT ?? null }, { argv: process.argv.slice(2) });
  if (process.env.WEB_PROFILER_CPU === '1') startCpu(ctx, 'asked');
  setProcessWork(ctx);
  let done = false;
  const finish = (code: number) => {
    if (done) return;
    done = true;
    setProcessWork(undefined);
    commandFinished(ctx, undefined, code);
    profiler.close();
  };
  // Seen, not handled: the process ends as it would (uncaught exceptions and unhandled rejections both pass here).
  process.on('uncaughtExceptionMonitor', (err) => {
    if (ctx.error === undefined) ctx.error = err;
  });
  process.on('exit', (code) => finish(code));
  for (const [signal, n] of Object.entries(SIGNALS)) {
    const onSignal = () => {
      ctx.command!.signal = signal;
      // An app that handles the signal decides what happens: its exit is recorded then.
      if (process.listenerCount(signal) > 1) return;
      finish(128 + n);
      process.removeListener(signal, onSignal);
      process.kill(process.pid, signal);
    };
    process.on(signal, onSignal);
  }
  return profiler;
}
