import { typeOf, type BodyData } from '../redaction/body.js';
import { hostIn, linkIn, pathIn } from '../redaction/record.js';
import type { ProfileSummary } from '../storage/profile.js';

/**
 * What a panel's data repeated of the profile's summary in rows from before records: what unpack()
 * puts back (see CorePanel.unpack).
 */

/** The path and query of the summary's URL (scheme://host/path?query): what the request panel shows as its URL. */
export const pathOf = (summary: ProfileSummary): string => pathIn(summary.url);

/** The path of the summary's URL, without its query: what the routing panel shows. */
export function pagePathOf(summary: ProfileSummary): string {
  const path = pathOf(summary);
  const query = path.indexOf('?');
  return query < 0 ? path : path.slice(0, query);
}

/** The host of the summary's URL: the request's Host header, most often. */
export const hostOf = (summary: ProfileSummary): string => hostIn(summary.url);

/** The profile's own link, as X-Debug-Token-Link gave it. */
export const linkOf = (summary: ProfileSummary): string => linkIn(summary.url, summary.token);

/** Put back a field that was left out when it was {}. */
export const orEmpty = (value: unknown): unknown => (value === undefined ? {} : value);

/** In stored headers: "the value the summary gives". */
const DERIVED = 0;

export type DerivedHeaders = [name: string, derive: (summary: ProfileSummary) => string][];

export function unpackHeaders(headers: Record<string, unknown>, derived: DerivedHeaders, summary: ProfileSummary): Record<string, unknown> {
  for (const [name, derive] of derived) if (headers[name] === DERIVED) headers[name] = derive(summary);
  return headers;
}

/** A body as rows of panels stored it: its content type when the headers' is another (null for none), `truncated` only when true. */
export type StoredBody = Omit<BodyData, 'contentType' | 'truncated'> & { contentType?: string | null; truncated?: true };

export function unpackBody(stored: StoredBody, headers: Record<string, unknown>): BodyData {
  const { size, contentType, kind, encoding, json, text, truncated } = stored;
  const body: BodyData = { size, contentType: contentType === undefined ? typeOf(headers) : (contentType ?? undefined), kind, json, text, truncated: truncated ?? false };
  if (encoding !== undefined) body.encoding = encoding;
  return body;
}
