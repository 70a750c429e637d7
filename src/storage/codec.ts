import { deflateRawSync, inflateRawSync } from 'node:zlib';

/** How a profile's panel data is stored: JSON as it is, or deflated when that pays. */
export const ENCODING_JSON = 0;
export const ENCODING_DEFLATE = 1;
/** Below this, deflate's header and CPU cost more than they save. */
const COMPRESS_FROM = 8192;

export function encode(json: string): [number, string | Buffer] {
  if (json.length < COMPRESS_FROM) return [ENCODING_JSON, json];
  return [ENCODING_DEFLATE, deflateRawSync(json, { level: 1 })];
}

/** `data` as SQLite's binding gave it back: a Buffer (better-sqlite3) or a Uint8Array (node:sqlite). */
export function decode(encoding: number, data: Uint8Array | string): string {
  if (encoding === ENCODING_DEFLATE) return inflateRawSync(data).toString('utf8');
  return typeof data === 'string' ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8');
}
