import { types } from 'node:util';

/** What one plain() copy may spend: roughly the bytes of its JSON. */
export const PLAIN_BUDGET = 256 * 1024;
const MAX_DEPTH = 20;
const MAX_STRING = 10_000;
const MAX_ENTRIES = 1000;

/** A plain() copy, whether anything was left out to keep within the budget, and about how many bytes it holds. */
export interface Bounded {
  value: unknown;
  cut: boolean;
  size: number;
}

/**
 * A JSON-safe copy of anything an app may log, attach or parse into req.body: cycles, BigInt,
 * functions, Errors, byte arrays and deep or huge structures become short readable strings
 * instead of throwing at serialisation time or costing without bound. The walk spends at most
 * `budget` (about the bytes of the copy's JSON, so shared references cannot make it explode);
 * past it, what is left is dropped and `cut` says so. Keys are copied as own properties (setOwn),
 * so keys such as `__proto__` and `constructor` stay ordinary keys that are shown, never lost.
 */
export function bounded(value: unknown, budget = PLAIN_BUDGET, dataOnly = false): Bounded {
  const walk = new Walk(budget, dataOnly);
  const copy = walk.copy(value, 0);
  return { value: copy, cut: walk.cut, size: budget - Math.max(walk.left, 0) };
}

/**
 * obj[key] = value as an own property of a plain object, `__proto__` included (assigning that one
 * would set the prototype instead). Plain objects keep V8's fast shapes, which objects without a
 * prototype lose: headers and cookie names are made this way, many per profile, and serialised.
 */
export function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  else obj[key] = value;
}

/**
 * A copy read as dump() reads (see snapshot-value.ts): own data properties only, a getter named
 * and never called, a Proxy named and none of its traps run. For values the app handed a library
 * (a translation's), whose reading must run none of the app's code.
 */
export const dataOnly = (value: unknown, budget = PLAIN_BUDGET): Bounded => bounded(value, budget, true);

/** The copy alone: see bounded(). */
export const plain = (value: unknown, budget = PLAIN_BUDGET): unknown => bounded(value, budget).value;

class Walk {
  cut = false;
  private readonly ancestors: object[] = [];

  constructor(public left: number, private readonly dataOnly = false) {}

  private spend(n: number): boolean {
    this.left -= n;
    if (this.left >= 0) return true;
    this.cut = true;
    return false;
  }

  copy(value: unknown, depth: number): unknown {
    switch (typeof value) {
      case 'string': {
        const room = Math.min(MAX_STRING, Math.max(this.left, 0));
        this.spend(Math.min(value.length, MAX_STRING) + 2);
        if (value.length <= room) return value;
        this.cut = true;
        return `${value.slice(0, room)}…`;
      }
      case 'number':
        this.spend(8);
        return Number.isFinite(value) ? value : String(value);
      case 'boolean':
        this.spend(5);
        return value;
      case 'bigint':
        this.spend(16);
        return `${value}n`;
      case 'undefined':
        return undefined;
      case 'function':
        this.spend(16);
        return `[function ${value.name || 'anonymous'}]`;
      case 'symbol':
        this.spend(16);
        return value.toString();
    }
    if (value === null) return null;
    if (!this.spend(2)) return undefined;
    const obj = value as object;
    if (this.dataOnly && types.isProxy(obj)) return '[Proxy]';
    if (this.ancestors.includes(obj)) return '[circular]';
    if (depth >= MAX_DEPTH) return '[too deep]';
    if (obj instanceof Error) return this.copy(`${obj.name}: ${obj.message}`, depth);
    if (obj instanceof Date) return Number.isNaN(obj.getTime()) ? 'Invalid Date' : obj.toISOString();
    if (ArrayBuffer.isView(obj)) return `[${obj.constructor?.name ?? 'bytes'} ${obj.byteLength} bytes]`;
    if (obj instanceof ArrayBuffer) return `[ArrayBuffer ${obj.byteLength} bytes]`;
    this.ancestors.push(obj);
    try {
      return Array.isArray(obj) ? this.array(obj, depth) : this.object(obj, depth);
    } catch (err) {
      // A getter or proxy that throws: its text stands in for the value.
      return `[unreadable: ${(err as Error)?.message ?? err}]`;
    } finally {
      this.ancestors.pop();
    }
  }

  private array(list: unknown[], depth: number): unknown[] {
    const out: unknown[] = [];
    const n = Math.min(list.length, MAX_ENTRIES);
    for (let i = 0; i < n; i++) {
      if (this.left <= 0) break;
      out.push(this.copy(this.read(list, String(i)), depth + 1) ?? null);
    }
    if (out.length < list.length) this.cut = true;
    return out;
  }

  private object(obj: object, depth: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    let n = 0;
    for (const key of this.dataOnly ? Object.keys(obj) : keysIn(obj)) {
      if (n++ >= MAX_ENTRIES || this.left <= 0) {
        this.cut = true;
        break;
      }
      this.spend(key.length + 4);
      const v = this.copy(this.read(obj, key), depth + 1);
      if (v !== undefined) setOwn(out, key, v);
    }
    return out;
  }

  /** obj[key]; reading data only, a getter's name instead of its value. */
  private read(obj: object, key: string): unknown {
    if (!this.dataOnly) return (obj as Record<string, unknown>)[key];
    const descriptor = Object.getOwnPropertyDescriptor(obj, key);
    return descriptor === undefined ? undefined : 'value' in descriptor ? descriptor.value : '[getter]';
  }
}

/** The keys for…in visits: own and inherited enumerable ones. */
function keysIn(obj: object): string[] {
  const keys: string[] = [];
  for (const key in obj) keys.push(key);
  return keys;
}
