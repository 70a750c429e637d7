import { callerFrame } from './caller.js';
import { isProduction } from '../options.js';
import { requestOf, sinceStart } from './inside.js';
import { snapshotValue, type ValueNode } from './snapshot-value.js';
import { renderValue } from './render-value.js';
import type { WorkContext } from './context.js';

/** One dump() call as the profile keeps it. */
export interface Dump {
  label?: string;
  /** The app's line that called dump(). */
  at?: string;
  /** Milliseconds since the request (or command) began. */
  time: number;
  value: ValueNode;
}

/** More than this in one request is a loop: counted, not kept. */
export const MAX_DUMPS = 100;

let off: boolean | undefined;

/**
 * Shows `value` where it matters and gives it back, so that it can wrap an expression:
 * `return dump(await load(id), 'order')`. Inside a recorded request (or command, job, script) it
 * goes into that profile's Dumps panel, with the app's line that called it and when; outside any
 * recording it is printed to stderr with that line. In production it does nothing. The value is
 * read as it is at the call, without running any of the app's code (see snapshot-value.ts).
 */
export function dump<T>(value: T, label?: string): T {
  if ((off ??= isProduction(process.env))) return value;
  try {
    const ctx = requestOf();
    if (ctx !== undefined) keep(ctx, value, label);
    else process.stderr.write(`${header(label, callerFrame())}\n${renderValue(snapshotValue(value))}\n`);
  } catch {
    // A dump must never break the line it was put on.
  }
  return value;
}

function keep(ctx: WorkContext, value: unknown, label: string | undefined): void {
  const dumps = (ctx.dumps ??= { kept: [], dropped: 0 });
  if (dumps.kept.length >= MAX_DUMPS) {
    dumps.dropped++;
    return;
  }
  dumps.kept.push({ label: typeof label === 'string' ? label.slice(0, 200) : undefined, at: callerFrame(), time: sinceStart(ctx), value: snapshotValue(value) });
}

const header = (label: string | undefined, at: string | undefined) => `[dump]${label === undefined ? '' : ` ${label}`}${at === undefined ? '' : ` at ${at}`}`;
