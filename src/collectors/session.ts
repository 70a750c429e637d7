import type { StoredSession } from '../redaction/who.js';

/** One attribute the request added, changed or removed. */
export interface SessionChange {
  key: string;
  change: 'added' | 'changed' | 'removed';
  before?: unknown;
  after?: unknown;
}

/** A flash message (connect-flash's `req.flash`): its type and text. */
export interface Flash {
  type: string;
  message: unknown;
}

/** The Session tab: the session as the request found and left it, what changed, and the flashes set and read. */
export interface SessionView extends StoredSession {
  changes: SessionChange[];
  flashes: { set: Flash[]; read: Flash[] };
}

/** Where connect-flash keeps its messages: shown as flashes, not as a change. */
const FLASH = 'flash';

const same = (a: unknown, b: unknown): boolean => a === b || JSON.stringify(a) === JSON.stringify(b);

/** The Session tab's view of a stored session, derived on read. */
export function sessionView(s: StoredSession): SessionView {
  const before = s.found ?? {};
  const after = s.left ?? {};
  const changes: SessionChange[] = [];
  for (const key of Object.keys(after)) {
    if (key === FLASH) continue;
    if (!Object.hasOwn(before, key)) changes.push({ key, change: 'added', after: after[key] });
    else if (!same(before[key], after[key])) changes.push({ key, change: 'changed', before: before[key], after: after[key] });
  }
  for (const key of Object.keys(before)) if (key !== FLASH && !Object.hasOwn(after, key)) changes.push({ key, change: 'removed', before: before[key] });
  return { ...s, changes, flashes: { set: flashesOnlyIn(after[FLASH], before[FLASH]), read: flashesOnlyIn(before[FLASH], s.left === null ? undefined : after[FLASH]) } };
}

/** The messages of `flash` that `other` does not hold (as many times as they are missing): set ones are in the after only, read ones in the before only. */
function flashesOnlyIn(flash: unknown, other: unknown): Flash[] {
  const out: Flash[] = [];
  for (const [type, messages] of entries(flash)) {
    const left = [...(entries(other).find(([t]) => t === type)?.[1] ?? [])];
    for (const message of messages) {
      const at = left.findIndex((m) => same(m, message));
      if (at >= 0) left.splice(at, 1);
      else out.push({ type, message });
    }
  }
  return out;
}

const entries = (flash: unknown): [string, unknown[]][] =>
  flash === null || typeof flash !== 'object' || Array.isArray(flash) ? [] : Object.entries(flash as Record<string, unknown>).map(([type, m]) => [type, Array.isArray(m) ? m : [m]]);
