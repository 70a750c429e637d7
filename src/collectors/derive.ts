import type { ProfileSummary } from '../storage/profile.js';

/**
 * What a panel's data repeats of the profile's summary, for pack() and unpack() (see CorePanel).
 * A field is left out only when what these give back is the same value.
 */

/** The path and query of the summary's URL (scheme://host/path?query): what the request panel shows as its URL. */
export function pathOf(summary: ProfileSummary): string {
  const at = summary.url.indexOf('/', summary.url.indexOf('//') + 2);
  return at < 0 ? '' : summary.url.slice(at);
}

/** scheme://host of the summary's URL. */
const originOf = (summary: ProfileSummary): string => summary.url.slice(0, summary.url.length - pathOf(summary).length);

/** The host of the summary's URL: the request's Host header, most often. */
export const hostOf = (summary: ProfileSummary): string => originOf(summary).slice(originOf(summary).indexOf('//') + 2);

/** The profile's own link, as X-Debug-Token-Link gave it. */
export const linkOf = (summary: ProfileSummary): string => `${originOf(summary)}/_profiler/${summary.token}`;

/** An object with no keys, which the panels show for "none": left out, and put back as {}. */
export const isEmpty = (value: unknown): boolean =>
  value !== null && typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length === 0;

/** Put back what pack() left out of a field that is {} when there is none. */
export const orEmpty = (value: unknown): unknown => (value === undefined ? {} : value);

/** In stored headers: "the value the summary gives" (headers are packed only where no value is the number 0). */
const DERIVED = 0;

export type DerivedHeaders = [name: string, derive: (summary: ProfileSummary) => string][];

/** The headers with the usual values of `derived` marked DERIVED, in place: their order is what the panel shows. */
export function packHeaders(headers: Record<string, unknown>, derived: DerivedHeaders, summary: ProfileSummary): Record<string, unknown> {
  let packed: Record<string, unknown> | undefined;
  for (const [name] of derived) if (headers[name] === DERIVED) return headers;
  for (const [name, derive] of derived) {
    const value = headers[name];
    if (typeof value === 'string' && value === derive(summary)) (packed ??= Object.assign(Object.create(null) as Record<string, unknown>, headers))[name] = DERIVED;
  }
  return packed ?? headers;
}

export function unpackHeaders(headers: Record<string, unknown>, derived: DerivedHeaders, summary: ProfileSummary): Record<string, unknown> {
  for (const [name, derive] of derived) if (headers[name] === DERIVED) headers[name] = derive(summary);
  return headers;
}
