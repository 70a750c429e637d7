import { inspect, types } from 'node:util';
import { mapHead, setHead } from '../errors/collections.js';

/**
 * A value as dump() keeps it: a tree of plain nodes, taken at the moment of the call (a later
 * change to the value changes nothing here), bounded in depth, width and size, each cut said.
 * Reading it never runs the app's code: own data properties only (a getter is named, not
 * called), no toJSON, no iterator but Map's and Set's own, a Proxy shown as one (its traps
 * never run).
 */
export type ValueNode =
  | { k: 'undefined' | 'null' | 'getter' | 'proxy' | 'cut' }
  | { k: 'boolean'; v: boolean }
  | { k: 'number' | 'bigint' | 'symbol' | 'date' | 'regexp'; v: string }
  | { k: 'string'; v: string; n: number }
  | { k: 'function'; v: string; c?: string }
  | { k: 'ref'; id: number; cycle?: true }
  | { k: 'bytes'; c: string; n: number; v: string }
  | { k: 'promise'; v: 'pending' | 'fulfilled' | 'rejected' }
  | Branch;

/** An object, array, Map, Set or Error: its entries as [key, value] (a Set's and an array's keys are their places), and how many more it had. */
export interface Branch {
  k: 'object' | 'array' | 'map' | 'set' | 'error';
  /** Its class. */
  c: string;
  /** Its number, when another place refers to it again. */
  id?: number;
  /** Entries: [key as text, value] for objects, arrays and Sets; [key node, value] for a Map. */
  e: [string | ValueNode, ValueNode][];
  /** How many entries there were in all (an array's length, a Map's size), when more than shown. */
  n?: number;
  /** An Error's message and stack. */
  v?: string;
  stack?: string;
}

export interface ValueLimits {
  depth: number;
  /** Entries shown of one object, array, Map or Set. */
  width: number;
  /** Nodes in all. */
  nodes: number;
  /** Characters of one string. */
  text: number;
  /** Characters of the whole tree (its strings, and 16 a node): past them the rest is cut. */
  chars?: number;
}

export const DUMP_LIMITS: ValueLimits = { depth: 8, width: 100, nodes: 5_000, text: 2_000 };

const TYPED_LENGTH = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), 'length')!.get as (this: unknown) => number;
const TYPED_TAG = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), Symbol.toStringTag)!.get as (this: unknown) => string | undefined;
const DATE_TIME = Date.prototype.getTime;
const DATE_ISO = Date.prototype.toISOString;
const REGEXP_TEXT = RegExp.prototype.toString;
const FUNCTION_TEXT = Function.prototype.toString;

/** `value` as a tree of plain nodes: see ValueNode. `used.chars` is told the characters it took (see ValueLimits.chars). */
export function snapshotValue(value: unknown, limits: ValueLimits = DUMP_LIMITS, used: { chars: number } = { chars: 0 }): ValueNode {
  let nodes = 0;
  const budget = limits.chars ?? Infinity;
  /** Up to `length` characters of the budget, as many as are left. */
  const take = (length: number): number => {
    const room = Math.max(0, Math.min(length, budget - used.chars));
    used.chars += room;
    return room;
  };
  let nextId = 1;
  const seen = new Map<object, { node: Branch | undefined; open: boolean }>();
  const refs = new Map<object, number>();
  const refTo = (object: object, cycle: boolean): ValueNode => {
    let id = refs.get(object);
    if (id === undefined) {
      id = nextId++;
      refs.set(object, id);
      const target = seen.get(object)?.node;
      if (target !== undefined) target.id = id;
    }
    return cycle ? { k: 'ref', id, cycle: true } : { k: 'ref', id };
  };

  const walk = (v: unknown, depth: number): ValueNode => {
    if (++nodes > limits.nodes || take(16) < 16) return { k: 'cut' };
    switch (typeof v) {
      case 'undefined': return { k: 'undefined' };
      case 'boolean': return { k: 'boolean', v };
      case 'number': return { k: 'number', v: Object.is(v, -0) ? '-0' : String(v) };
      case 'bigint': return { k: 'bigint', v: `${v}n` };
      case 'string': {
        const kept = take(Math.min(v.length, limits.text));
        return kept < v.length ? { k: 'string', v: v.slice(0, kept), n: v.length } : { k: 'string', v, n: v.length };
      }
      case 'symbol': return { k: 'symbol', v: safely(() => v.toString(), 'Symbol()') };
      case 'function': return { k: 'function', v: functionName(v), c: functionKind(v) };
    }
    if (v === null) return { k: 'null' };
    const object = v as object;
    if (types.isProxy(object)) return { k: 'proxy' };
    const met = seen.get(object);
    if (met !== undefined) return refTo(object, met.open);
    if (types.isDate(object)) {
      const time = DATE_TIME.call(object);
      return { k: 'date', v: Number.isNaN(time) ? 'Invalid Date' : DATE_ISO.call(object) };
    }
    if (types.isRegExp(object)) return { k: 'regexp', v: REGEXP_TEXT.call(object) };
    if (types.isPromise(object)) return { k: 'promise', v: promiseState(object as Promise<unknown>) };
    if (ArrayBuffer.isView(object)) return bytesOf(object);
    if (types.isAnyArrayBuffer(object)) return { k: 'bytes', c: types.isSharedArrayBuffer(object) ? 'SharedArrayBuffer' : 'ArrayBuffer', n: (object as ArrayBuffer).byteLength, v: hex(new Uint8Array(object as ArrayBuffer)) };
    if (types.isWeakMap(object) || types.isWeakSet(object)) return { k: 'object', c: types.isWeakMap(object) ? 'WeakMap' : 'WeakSet', e: [] };
    const branch: Branch = { k: 'object', c: classOf(object), e: [] };
    if (depth >= limits.depth) return { ...branch, k: kindOf(object), e: [], n: -1 };
    const mark = { node: branch, open: true };
    seen.set(object, mark);
    try {
      fill(branch, object, depth);
    } finally {
      mark.open = false;
    }
    return branch;
  };

  const fill = (branch: Branch, object: object, depth: number): void => {
    const width = limits.width;
    if (types.isMap(object)) {
      branch.k = 'map';
      const { entries, size } = mapHead(object as Map<unknown, unknown>, width);
      for (const [key, value] of entries) branch.e.push([walk(key, depth + 1), walk(value, depth + 1)]);
      if (size > entries.length) branch.n = size;
      return;
    }
    if (types.isSet(object)) {
      branch.k = 'set';
      const { values, size } = setHead(object as Set<unknown>, width);
      values.forEach((value, i) => branch.e.push([String(i), walk(value, depth + 1)]));
      if (size > values.length) branch.n = size;
      return;
    }
    if (Array.isArray(object)) {
      branch.k = 'array';
      const length = object.length;
      for (let i = 0; i < Math.min(length, width); i++) branch.e.push([String(i), own(object, String(i), depth)]);
      if (length > branch.e.length) branch.n = length;
      return;
    }
    if (types.isNativeError(object)) {
      branch.k = 'error';
      const message = textOf(dataOf(object, 'message'));
      const stack = textOf(stackOf(object));
      branch.v = message?.slice(0, take(message.length));
      branch.stack = stack?.slice(0, take(stack.length));
    }
    const keys = safely(() => Object.keys(object), [] as string[]);
    for (const key of keys.slice(0, width)) {
      if (branch.k === 'error' && (key === 'message' || key === 'stack')) continue;
      if (take(key.length) < key.length) {
        branch.n = keys.length;
        break;
      }
      branch.e.push([key, own(object, key, depth)]);
    }
    if (keys.length > width) branch.n = keys.length;
  };

  /** An own property as it is stored: a getter is named, never called. */
  const own = (object: object, key: string, depth: number): ValueNode => {
    const descriptor = safely(() => Object.getOwnPropertyDescriptor(object, key), undefined);
    if (descriptor === undefined) return { k: 'undefined' };
    return 'value' in descriptor ? walk(descriptor.value, depth + 1) : { k: 'getter' };
  };

  return walk(value, 0);
}

const kindOf = (object: object): Branch['k'] => (types.isMap(object) ? 'map' : types.isSet(object) ? 'set' : Array.isArray(object) ? 'array' : types.isNativeError(object) ? 'error' : 'object');

function bytesOf(view: ArrayBufferView): ValueNode {
  const bytes = new Uint8Array(view.buffer, view.byteOffset, Math.min(view.byteLength, 32));
  const typed = types.isTypedArray(view);
  const c = Buffer.isBuffer(view) ? 'Buffer' : typed ? (TYPED_TAG.call(view) ?? 'TypedArray') : 'DataView';
  return { k: 'bytes', c, n: typed ? TYPED_LENGTH.call(view) : view.byteLength, v: hex(bytes, view.byteLength) };
}

const hex = (bytes: Uint8Array, total = bytes.byteLength): string => {
  let out = '';
  for (let i = 0; i < Math.min(bytes.length, 32); i++) out += (i > 0 ? ' ' : '') + bytes[i].toString(16).padStart(2, '0');
  return total > 32 ? `${out} …` : out;
};

/** A promise's state, as Node tells it without awaiting (its inspection reads V8's, and runs nothing of the app's). */
function promiseState(promise: Promise<unknown>): 'pending' | 'fulfilled' | 'rejected' {
  const shown = safely(() => inspect(promise, { depth: 0, customInspect: false, showProxy: true, getters: false }), '');
  return shown.includes('<pending>') ? 'pending' : shown.includes('<rejected>') ? 'rejected' : 'fulfilled';
}

/** A value's class, by its prototype's own constructor (a data property: no getter runs). */
function classOf(object: object): string {
  const proto = safely(() => Object.getPrototypeOf(object) as object | null, null);
  if (proto === null) return Array.isArray(object) ? 'Array' : 'Object (null prototype)';
  const made = dataOf(proto, 'constructor');
  return typeof made === 'function' ? functionName(made) || 'Object' : 'Object';
}

function functionName(fn: Function): string {
  const name = dataOf(fn, 'name');
  return typeof name === 'string' && name !== '' ? name : '(anonymous)';
}

function functionKind(fn: Function): string | undefined {
  if (types.isAsyncFunction(fn)) return 'async';
  if (types.isGeneratorFunction(fn)) return 'generator';
  const text = safely(() => FUNCTION_TEXT.call(fn), '');
  return text.startsWith('class') ? 'class' : undefined;
}

const dataOf = (object: object, key: string): unknown => {
  const descriptor = safely(() => Object.getOwnPropertyDescriptor(object, key), undefined);
  return descriptor !== undefined && 'value' in descriptor ? descriptor.value : undefined;
};

/** An error's stack: a data property, or V8's own accessor (Node 24's), never an app's getter. */
function stackOf(error: object): unknown {
  const descriptor = safely(() => Object.getOwnPropertyDescriptor(error, 'stack'), undefined);
  if (descriptor === undefined) return undefined;
  if ('value' in descriptor) return descriptor.value;
  const get = descriptor.get;
  return get !== undefined && /\{\s*\[native code\]\s*\}$/.test(safely(() => FUNCTION_TEXT.call(get), '')) ? safely(() => get.call(error), undefined) : undefined;
}

const textOf = (value: unknown): string | undefined => (typeof value === 'string' ? value.slice(0, 8_000) : undefined);

function safely<T>(fn: () => T, fallback: T): T {
  try {
    return fn();
  } catch {
    return fallback;
  }
}
