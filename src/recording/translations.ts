import { dataOnly } from './plain.js';
import type { WorkContext } from './context.js';

/** One message as a request translated it, counted when the same key came back in the same language. */
export interface Translation {
  key: string;
  ns: string;
  /** The language asked for. */
  lng: string;
  /** The language whose resources answered (another one when it fell back); none when missing. */
  usedLng?: string;
  state: 'found' | 'fallback' | 'missing';
  /** The interpolation values given (count, names…), as they were at the first call. */
  values?: Record<string, unknown>;
  /** What it gave back, at the first call. */
  result: string;
  count: number;
}

export interface TranslationsState {
  byKey: Map<string, Translation>;
  /** The language the request's translations were asked in first. */
  language?: string;
  /** The languages i18next has resources for, and falls back to. */
  known?: string[];
  fallback?: string[];
  /** Keys past the bound: counted, not kept. */
  dropped: number;
}

/** More distinct keys than this in one request is a page of a dictionary: counted, not kept. */
const MAX_KEYS = 500;
const VALUES_BUDGET = 2 * 1024;

/** A translation the request asked for, as i18next answered it (see instruments/i18next.ts). */
export function noteTranslation(ctx: WorkContext, t: Omit<Translation, 'count'>, languages: () => { known: string[]; fallback: string[] }): void {
  let state = ctx.translations;
  if (state === undefined) {
    state = ctx.translations = { byKey: new Map(), dropped: 0, language: t.lng, ...languages() };
  }
  const id = `${t.ns}\u0000${t.key}\u0000${t.lng}`;
  const seen = state.byKey.get(id);
  if (seen !== undefined) {
    seen.count++;
    return;
  }
  if (state.byKey.size >= MAX_KEYS) {
    state.dropped++;
    return;
  }
  const values = t.values === undefined ? undefined : (dataOnly(t.values, VALUES_BUDGET).value as Record<string, unknown>);
  state.byKey.set(id, { ...t, values, result: t.result.slice(0, 1000), count: 1 });
}
