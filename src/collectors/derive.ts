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

/** The path of the summary's URL, without its query: what the routing panel shows. */
export function pagePathOf(summary: ProfileSummary): string {
  const path = pathOf(summary);
  const query = path.indexOf('?');
  return query < 0 ? path : path.slice(0, query);
}

/** scheme://host of the summary's URL. */
const originOf = (summary: ProfileSummary): string => summary.url.slice(0, summary.url.length - pathOf(summary).length);

/** The host of the summary's URL: the request's Host header, most often. */
export function hostOf(summary: ProfileSummary): string {
  const origin = originOf(summary);
  return origin.slice(origin.indexOf('//') + 2);
}

/** The profile's own link, as X-Debug-Token-Link gave it. */
export const linkOf = (summary: ProfileSummary): string => `${originOf(summary)}/_profiler/${summary.token}`;

/** An object with no keys, which the panels show for "none": left out, and put back as {}. */
export function isEmpty(value: unknown): boolean {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  for (const key in value) if (Object.hasOwn(value, key)) return false;
  return true;
}

/** Put back what pack() left out of a field that is {} when there is none. */
export const orEmpty = (value: unknown): unknown => (value === undefined ? {} : value);

/** In stored headers: "the value the summary gives" (headers are packed only where no value is the number 0). */
const DERIVED = 0;

export type DerivedHeaders = [name: string, derive: (summary: ProfileSummary) => string][];

/** The usual values of `derived` marked DERIVED, in place: their order is what the panel shows. */
export function packHeaders(headers: Record<string, unknown>, derived: DerivedHeaders, summary: ProfileSummary): void {
  for (const [name] of derived) if (headers[name] === DERIVED) return;
  for (const [name, derive] of derived) {
    const value = headers[name];
    if (typeof value === 'string' && value === derive(summary)) headers[name] = DERIVED;
  }
}

export function unpackHeaders(headers: Record<string, unknown>, derived: DerivedHeaders, summary: ProfileSummary): Record<string, unknown> {
  for (const [name, derive] of derived) if (headers[name] === DERIVED) headers[name] = derive(summary);
  return headers;
}

let dateSecond = NaN;
let dateText = '';

/** The Date header of a response sent in the second `time` falls in (one string a second, not one a profile). */
export function httpDate(time: number): string {
  const second = Math.floor(time / 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateText = new Date(second * 1000).toUTCString();
  }
  return dateText;
}
