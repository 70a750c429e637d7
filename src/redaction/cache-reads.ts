import type { CapturedCommand } from '../recording/inside-capture.js';

/*
 * Which keys a Redis command names and whether a read found them: what the cache panel shows of
 * each command, and what the writer counts for insights (see facts.ts).
 */

const NO_KEYS = new Set(['PING', 'ECHO', 'INFO', 'SELECT', 'AUTH', 'HELLO', 'MULTI', 'EXEC', 'DISCARD', 'FLUSHDB', 'FLUSHALL', 'DBSIZE', 'SCAN', 'KEYS', 'CLIENT', 'CONFIG', 'QUIT', 'TIME', 'COMMAND', 'SCRIPT', 'PUBLISH', 'SUBSCRIBE', 'PSUBSCRIBE', 'UNSUBSCRIBE', 'PIPELINE']);
const ALL_KEYS = new Set(['MGET', 'DEL', 'EXISTS', 'UNLINK', 'TOUCH', 'WATCH', 'SINTER', 'SUNION', 'SDIFF', 'PFCOUNT']);
/** Reads whose reply says hit or miss: nil for one key, nils among many, an empty hash, a count of keys that exist. */
const ONE_KEY_READS = new Set(['GET', 'GETEX', 'GETDEL', 'HGET', 'LINDEX', 'ZSCORE', 'JSON.GET']);
const MANY_KEY_READS = new Set(['MGET', 'HMGET']);

/** The keys a command names, where Redis puts them. */
export function keysOf(command: string, args: string[]): string[] {
  return keysAt(command.toUpperCase(), args).filter((key) => key !== '?');
}

/** Where they are: a key a client hid reads `?` (ioredis and node-redis hide MGET's and HGET's). */
function keysAt(name: string, args: string[]): string[] {
  if (NO_KEYS.has(name) || args.length === 0) return [];
  if (ALL_KEYS.has(name)) return args;
  if (name === 'MSET' || name === 'MSETNX') return args.filter((_, i) => i % 2 === 0);
  if (name === 'EVAL' || name === 'EVALSHA' || name === 'FCALL') return args.slice(2, 2 + (Number(args[1]) || 0));
  return [args[0]];
}

/** Hits and misses of a read, by key: undefined for a command that is no read. */
export function lookups(c: CapturedCommand, keys: string[]): { hits: number; misses: number } | undefined {
  const name = c.command.toUpperCase();
  const reply = c.reply;
  if (reply === undefined) return undefined;
  if (ONE_KEY_READS.has(name)) return reply.nil ? { hits: 0, misses: 1 } : { hits: 1, misses: 0 };
  if (MANY_KEY_READS.has(name)) return { hits: (reply.items ?? 0) - (reply.nils ?? 0), misses: reply.nils ?? 0 };
  if (name === 'HGETALL') return (reply.items ?? 0) > 0 ? { hits: 1, misses: 0 } : { hits: 0, misses: 1 };
  if (name === 'EXISTS' && reply.int !== undefined) return { hits: reply.int, misses: Math.max(keys.length - reply.int, 0) };
  return undefined;
}
