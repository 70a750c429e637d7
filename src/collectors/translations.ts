import type { Translation } from '../recording/translations.js';
import type { CorePanel } from './collector.js';

export interface TranslationsData {
  /** Missing first, then fallbacks, then found; each in the order first asked. */
  messages: Translation[];
  counts: Record<Translation['state'], number>;
  /** The request's language (the first asked), the languages i18next has resources for, and its fallbacks for the request's. */
  language?: string;
  known: string[];
  fallback: string[];
  /** Distinct keys past the bound: counted, not kept. */
  dropped: number;
}

const ORDER: Record<Translation['state'], number> = { missing: 0, fallback: 1, found: 2 };

/** What a request translated through i18next, and what it could not: the Translations panel. */
export const translations: CorePanel<TranslationsData> = {
  id: 'translations',
  title: 'Translations',
  collect: (s) => {
    const t = s.translations;
    if (t === undefined || t.messages.length === 0) return undefined;
    const messages = t.messages.map((m, i) => ({ m, i })).sort((a, b) => ORDER[a.m.state] - ORDER[b.m.state] || a.i - b.i).map(({ m }) => m);
    const counts = { missing: 0, fallback: 0, found: 0 };
    for (const m of messages) counts[m.state]++;
    return { messages, counts, language: t.language, known: t.known ?? [], fallback: t.fallback ?? [], dropped: t.dropped ?? 0 };
  },
  badge: (data) => (data.counts.missing > 0 ? `${data.counts.missing} missing` : data.messages.length),
};
