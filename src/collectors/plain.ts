import { inspect } from 'node:util';

/**
 * A JSON-safe copy of anything an app may log or attach: cycles, BigInt, functions, Errors and
 * deep or huge structures become readable strings instead of throwing at serialisation time.
 */
export function plain(value: unknown, depth = 0, seen: WeakSet<object> = new WeakSet()): unknown {
  switch (typeof value) {
    case 'string':
      return value.length > 10_000 ? `${value.slice(0, 10_000)}…` : value;
    case 'number':
      return Number.isFinite(value) ? value : String(value);
    case 'boolean':
      return value;
    case 'bigint':
      return `${value}n`;
    case 'undefined':
      return undefined;
    case 'function':
      return `[function ${value.name || 'anonymous'}]`;
    case 'symbol':
      return value.toString();
  }
  if (value === null) return null;
  const obj = value as object;
  if (seen.has(obj)) return '[circular]';
  if (depth > 8) return inspect(obj, { depth: 0 });
  if (value instanceof Error) return `${value.name}: ${value.message}`;
  if (value instanceof Date) return value.toISOString();
  if (Buffer.isBuffer(value)) return `[Buffer ${value.length} bytes]`;
  seen.add(obj);
  if (Array.isArray(value)) return value.slice(0, 1000).map((v) => plain(v, depth + 1, seen));
  const out: Record<string, unknown> = {};
  let n = 0;
  for (const key in obj) {
    if (n++ >= 1000) break;
    out[key] = plain((obj as Record<string, unknown>)[key], depth + 1, seen);
  }
  return out;
}
