import type { CapturedCommand } from '../recording/inside-capture.js';
import { hideData } from './hidden.js';
import { redactText } from './redact.js';
import type { RequestSecrets } from './request-secrets.js';

/**
 * How many arguments after the command name are shown, as the Redis clients' own tracing (and
 * OpenTelemetry's redis-common) has it: the key and what addresses it; a value (SET's, HSET's,
 * an unknown command's arguments) reads `?`. -1: all (reads and structure).
 */
const SHOWN: [RegExp, number][] = [
  // Reads that name keys only (the clients hide these too: their keys are shown here where the client gave them raw).
  [/^(MGET|HGET|HMGET|HGETALL|HKEYS|HVALS|HLEN|HEXISTS|HSTRLEN|UNLINK|TOUCH|TTL|PTTL|TYPE|STRLEN)$/i, -1],
  [/^ECHO/i, 0],
  [/^(GETSET|LPUSH|MSET|PFA|PSETEX|PUBLISH|RPUSH|SADD|SET|SPUBLISH|XADD|ZADD)/i, 1],
  [/^(HSET|HMSET|LSET|LINSERT)/i, 2],
  [/^(ACL|BIT|B[LRZ]|CLIENT|CLUSTER|CONFIG|COMMAND|DECR|DEL|EVAL|EX|FUNCTION|GEO|GET|HINCR|HMGET|HSCAN|INCR|L[TRLM]|MEMORY|P[EFISTU]|RPOP|S[CDIMORSU]|XACK|X[CDGILPRT]|Z[CDILMPRS])/i, -1],
];

/** SET's options follow its value: shown, as the words they are, after the `?`. */
const SET_OPTIONS = /^(EX|PX|EXAT|PXAT|NX|XX|KEEPTTL|GET|\d+)$/i;

/** A script's call: the script (or its SHA, or the function's name), how many keys, the keys; its ARGV are values (a queued job's data). */
const SCRIPT = /^(EVAL|EVALSHA|EVAL_RO|EVALSHA_RO|FCALL|FCALL_RO)$/i;

function sanitised(command: string, args: string[]): string[] {
  const shown = SCRIPT.test(command) ? 2 + (Number(args[1]) || 0) : SHOWN.find(([pattern]) => pattern.test(command))?.[1] ?? 0;
  if (shown === -1) return args;
  const set = /^SET$/i.test(command);
  return args.map((arg, i) => (i < shown || (set && i > 1 && SET_OPTIONS.test(arg)) ? arg : hideData(arg, '?')));
}

/** A command's arguments as the cache panel shows them: see redactCommand. */
export const redactArgs = (command: string, args: string[], secrets?: RequestSecrets): string[] =>
  sanitised(command, args).map((arg) => (arg !== '?' && secrets !== undefined ? secrets.cut(arg) : arg));

/**
 * A command as stored: values hidden as the clients hide them (the channels' are hidden already),
 * and any key or argument that holds one of the request's secrets (a session id in `sess:<id>`)
 * redacted; an error's message redacted like any text.
 */
export function redactCommand(c: CapturedCommand, keys: string[], secrets: RequestSecrets | undefined): CapturedCommand {
  const out: CapturedCommand = { ...c, args: redactArgs(c.command, c.args, secrets) };
  if (c.error) out.error = { ...c.error, message: redactText(c.error.message, keys) };
  if (c.commands) out.commands = c.commands.map((inner) => redactCommand(inner, keys, secrets));
  return out;
}
