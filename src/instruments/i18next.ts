import type { WorkContext } from '../recording/context.js';
import { requestOf } from '../recording/inside.js';
import { noteTranslation } from '../recording/translations.js';
import type { DriverAdapter } from './driver.js';
import { esmCopy } from './esm-copy.js';
import path from 'node:path';
import { types } from 'node:util';

type Resolved = { res?: unknown; usedKey?: string; exactUsedKey?: string; usedLng?: string; usedNS?: string } | undefined;
interface Translator {
  language?: string;
  options?: { fallbackLng?: unknown; nsSeparator?: unknown; defaultNS?: unknown };
  resourceStore?: { data?: Record<string, unknown> };
  languageUtils?: { getFallbackCodes?(fallback: unknown, code?: string): unknown };
  translate(keys: unknown, options?: unknown, lastKey?: unknown): unknown;
  resolve(keys: unknown, options?: unknown): Resolved;
  isValidLookup(res: unknown): boolean;
  extractFromKey(key: string, options: unknown): { key: string; namespaces: string[] };
}

/** i18next's own options, beside which the rest of what t() is given are the interpolation values. */
const OWN_OPTIONS = new Set(['defaultValue', 'ordinal', 'context', 'replace', 'lng', 'lngs', 'fallbackLng', 'ns', 'keySeparator', 'nsSeparator', 'returnObjects', 'returnDetails', 'joinArrays', 'postProcess', 'interpolation', 'keyPrefix', 'appendNamespaceToCIMode', 'skipInterpolation', 'nest']);

/** The first resolve() of each translate() under way: what answered it. */
const answering: { resolved: Resolved; met: boolean }[] = [];

/**
 * Each message a request translates through i18next (the instance the app made, and the clones
 * i18next-http-middleware makes per request, which share its Translator): the key, namespace,
 * the language asked and the one that answered, the values, what came back, and whether it was
 * found, fell back to another language, or is missing (the key came back). Translator is not
 * exported: it is reached through a throwaway instance of the copy the app loaded.
 */
function hookTranslator(proto: Translator): void {
  if (hooked.has(proto)) return;
  hooked.add(proto);
  const translate = proto.translate;
  const resolve = proto.resolve;
  proto.resolve = function (this: Translator, keys: unknown, options?: unknown) {
    const result = resolve.call(this, keys, options);
    const top = answering[answering.length - 1];
    if (top !== undefined && !top.met) {
      top.met = true;
      top.resolved = result;
    }
    return result;
  };
  proto.translate = function (this: Translator, keys: unknown, options?: unknown, lastKey?: unknown) {
    const ctx = requestOf();
    if (ctx === undefined) return translate.call(this, keys, options, lastKey);
    const frame = { resolved: undefined as Resolved, met: false };
    answering.push(frame);
    let result: unknown;
    try {
      result = translate.call(this, keys, options, lastKey);
    } finally {
      answering.pop();
    }
    try {
      note(ctx, this, keys, options, frame.met ? frame.resolved : undefined, result);
    } catch {
      // What cannot be read of a translation is not worth the app's page.
    }
    return result;
  };
}

const hooked = new WeakSet<object>();

function note(ctx: WorkContext, translator: Translator, keys: unknown, options: unknown, resolved: Resolved, result: unknown): void {
  // The app's options read as data (no getter called, no Proxy trap run): i18next reads them itself, bare.
  const o = options !== null && typeof options === 'object' && !types.isProxy(options) ? ownData(options) : {};
  const asked = Array.isArray(keys) ? String(keys[keys.length - 1]) : typeof keys === 'string' ? keys : String(keys);
  const { key, namespaces } = translator.extractFromKey(asked, o);
  const lng = String(o.lng ?? translator.language ?? '');
  const found = resolved !== undefined && translator.isValidLookup(resolved.res);
  const usedLng = found ? resolved.usedLng : undefined;
  let values: Record<string, unknown> | undefined;
  for (const name of Object.keys(o)) {
    if (OWN_OPTIONS.has(name) || name.startsWith('defaultValue')) continue;
    (values ??= {})[name] = o[name];
  }
  noteTranslation(ctx, {
    // The key that answered: a plural's own (`apples_other`).
    key: (found ? resolved?.exactUsedKey : undefined) ?? resolved?.usedKey ?? key,
    ns: resolved?.usedNS ?? namespaces[namespaces.length - 1] ?? String(translator.options?.defaultNS ?? 'translation'),
    lng,
    usedLng,
    state: !found ? 'missing' : usedLng !== undefined && usedLng !== lng ? 'fallback' : 'found',
    values,
    result: typeof result === 'string' ? result : result === null || result === undefined ? String(result) : `[${Array.isArray(result) ? 'array' : typeof result}]`,
  }, () => languagesOf(translator, lng));
}

/** An object's own data properties, as a plain object: a getter is left out. */
function ownData(options: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of Object.keys(options)) {
    const descriptor = Object.getOwnPropertyDescriptor(options, name);
    if (descriptor !== undefined && 'value' in descriptor) out[name] = descriptor.value;
  }
  return out;
}

function languagesOf(translator: Translator, lng: string): { known: string[]; fallback: string[] } {
  const known = Object.keys(translator.resourceStore?.data ?? {});
  const codes = translator.languageUtils?.getFallbackCodes?.(translator.options?.fallbackLng, lng);
  return { known, fallback: Array.isArray(codes) ? codes.map(String) : [] };
}

/** The Translator of a copy of i18next (its default export, or the module), reached through a throwaway instance. */
function translatorOf(loaded: unknown): Translator | undefined {
  const i18n = ((loaded as { default?: unknown }).default ?? loaded) as { createInstance?: (options?: object) => { init(options: object): unknown; translator?: Translator } };
  if (typeof i18n?.createInstance !== 'function') return undefined;
  const probe = i18n.createInstance();
  // Synchronous, with resources given: i18next 24+ reads initAsync, 23 initImmediate.
  probe.init({ initAsync: false, initImmediate: false, resources: {}, lng: 'en', showSupportNotice: false });
  const proto = probe.translator && Object.getPrototypeOf(probe.translator);
  return proto && typeof proto.translate === 'function' && typeof proto.resolve === 'function' ? proto : undefined;
}

export const i18next: DriverAdapter = {
  name: 'i18next',
  panel: 'translations',
  main: /[\\/]node_modules[\\/]i18next[\\/]dist[\\/]cjs[\\/]i18next\.js$/,
  matches: (loaded) => typeof (loaded as { createInstance?: unknown } | null)?.createInstance === 'function' && typeof (loaded as { t?: unknown }).t === 'function',
  hook(loaded) {
    const proto = translatorOf(loaded);
    if (proto !== undefined) hookTranslator(proto);
  },
};

/** The ES module copy an app that imports i18next runs (no require cache lists it). */
export async function hookEsmI18next(tell: (message: string) => void): Promise<void> {
  try {
    const copy = await esmCopy('i18next', (cjs) => (/[\\/]dist[\\/]cjs[\\/]i18next\.js$/.test(cjs) ? path.join(path.dirname(cjs), '..', 'esm', 'i18next.js') : undefined));
    const proto = copy && translatorOf(copy.module);
    if (proto !== undefined) hookTranslator(proto);
  } catch (err) {
    if ((err as Error)?.name === 'SyntaxError') return;
    tell(`i18next (ES module): ${(err as Error)?.message ?? err}: its translations are not recorded`);
  }
}
