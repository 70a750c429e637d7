// Reading a Map or a Set the app handed over, at the cost of what is shown: their own iterators,
// taken before any app could replace them (a subclass's or a patched method never runs).

const MAP_ENTRIES = Map.prototype.entries;
const SET_VALUES = Set.prototype.values;
const MAP_NEXT = Object.getPrototypeOf(new Map().entries()).next as (this: unknown) => IteratorResult<[unknown, unknown]>;
const SET_NEXT = Object.getPrototypeOf(new Set().values()).next as (this: unknown) => IteratorResult<unknown>;
const MAP_SIZE = Object.getOwnPropertyDescriptor(Map.prototype, 'size')!.get as (this: unknown) => number;
const SET_SIZE = Object.getOwnPropertyDescriptor(Set.prototype, 'size')!.get as (this: unknown) => number;

/** A Map's first `most` entries, and its size: `most` steps, whatever its size. */
export function mapHead(map: Map<unknown, unknown>, most: number): { entries: [unknown, unknown][]; size: number } {
  const entries: [unknown, unknown][] = [];
  const it = MAP_ENTRIES.call(map);
  for (let next = MAP_NEXT.call(it); !next.done && entries.length < most; next = MAP_NEXT.call(it)) entries.push(next.value);
  return { entries, size: MAP_SIZE.call(map) };
}

/** A Set's first `most` values, and its size. */
export function setHead(set: Set<unknown>, most: number): { values: unknown[]; size: number } {
  const values: unknown[] = [];
  const it = SET_VALUES.call(set);
  for (let next = SET_NEXT.call(it); !next.done && values.length < most; next = SET_NEXT.call(it)) values.push(next.value);
  return { values, size: SET_SIZE.call(set) };
}
