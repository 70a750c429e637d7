import type { CommandState } from '../recording/command.js';
import type { CorePanel } from './collector.js';

export interface CommandData extends CommandState {
  /** The process that ran it. */
  pid: number;
  /** The profile it belongs to: the request that queued the job, the run it ran in. */
  parent: string | null;
  /** The OpenTelemetry trace it ran under. */
  trace?: { traceId: string; spanId: string };
}

/** A command's own panel, in place of a request's Request and Response: what ran, with what, and how it ended. */
export const command: CorePanel<CommandData> = {
  id: 'command',
  title: 'Command',
  collect: (s) => (s.command === undefined ? undefined : { ...s.command, pid: s.pid, parent: s.parent, ...(s.trace ? { trace: s.trace } : {}) }),
  badge: (data) => (data.exitCode === 0 ? 'exit 0' : `exit ${data.exitCode ?? '?'}`),
};
