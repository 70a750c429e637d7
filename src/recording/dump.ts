import { callerFrame } from './caller.js';
import { isProduction } from '../options.js';
import { requestOf, sinceStart } from './inside.js';
import { DUMP_LIMITS, snapshotValue, type ValueNode } from './snapshot-value.js';
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
/**
 * Characters all of one request's dumps may keep: one request's data can never cost another
 * request its profile. The dump that reaches it is kept cut; those after it are counted.
 */
export const DUMP_BUDGET = 2 * 1024 * 1024;
/** Less room than this left: a dump would be nothing but cuts. */
const LEAST_ROOM = 1024;

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
  const dumps = (ctx.dumps ??= { kept: [], dropped: 0, chars: 0 });
  const room = DUMP_BUDGET - dumps.chars;
  if (dumps.kept.length >= MAX_DUMPS || room < LEAST_ROOM) {
    dumps.dropped++;
    return;
  }
  const used = { chars: 0 };
  const node = snapshotValue(value, { ...DUMP_LIMITS, chars: room }, used);
  dumps.chars += used.chars;
  dumps.kept.push({ label: typeof label === 'string' ? label.slice(0, 200) : undefined, at: callerFrame(), time: sinceStart(ctx), value: node });
}

const header = (label: string | undefined, at: string | undefined) => `[dump]${label === undefined ? '' : ` ${label}`}${at === undefined ? '' : ` at ${at}`}`;
