import * as zlib from 'node:zlib';
import type { WireBody } from '../recording/capture.js';
import { redactText, redactValue } from './redact.js';

/** A body kept as bytes: at most bodyLimit + 1 of them (enough to tell it was cut), and its full size. */
export interface RawBody {
  bytes: Uint8Array | string;
  size: number;
}

/** A body as it crossed from the request's thread, as bytes or text again. */
export const rawOf = (w: WireBody): RawBody => ({ bytes: w.bytes ? Buffer.from(w.text, 'latin1') : w.text, size: w.size });

/** A request or response body as stored: a bounded, redacted preview, or a description. */
export interface BodyData {
  size: number;
  contentType?: string;
  /** `form`: a form body a parser read (x-www-form-urlencoded), its fields in `json`; said where panels are derived, stored as `json`. */
  kind: 'json' | 'form' | 'text' | 'binary';
  /** The Content-Encoding the body went out in (gzip, deflate, br, zstd): what is shown is decoded. */
  encoding?: string;
  /** Parsed JSON (redacted), when the whole body fit and parsed. */
  json?: unknown;
  /** Text preview (redacted), when the body is text. */
  text?: string;
  truncated: boolean;
  /** Why it did not parse, as the body parser said: its text is what was received. */
  unparsed?: string;
}

const TEXTUAL = /^(text\/|application\/(.*\+)?(json|xml|javascript|x-www-form-urlencoded|graphql)|image\/svg)/i;

export const isTextual = (contentType: string | undefined): boolean => !contentType || TEXTUAL.test(contentType);

/**
 * Describe a body from the bytes that were kept (at most `limit` + 1 of `size`). A compressed one
 * (`encoding`, the Content-Encoding header) is decoded first, as far as its kept bytes go and up
 * to the limit: secrets in it are redacted like any body's.
 */
export function describeBytes(raw: RawBody, contentType: string | undefined, limit: number, keys: string[], encoding?: unknown): BodyData {
  const { size } = raw;
  let bytes = typeof raw.bytes === 'string' ? Buffer.from(raw.bytes) : Buffer.from(raw.bytes.buffer, raw.bytes.byteOffset, raw.bytes.byteLength);
  let truncated = size > limit || bytes.length > limit;
  const coding = typeof encoding === 'string' ? encoding.trim().toLowerCase() : '';
  const decoded = coding === '' || coding === 'identity' ? undefined : decode(coding, bytes, limit);
  const described = (data: BodyData): BodyData => (decoded === undefined ? data : { ...data, encoding: coding });
  if (decoded !== undefined) {
    if (decoded === null) return described({ size, contentType, kind: 'binary', truncated: false });
    bytes = decoded.bytes;
    truncated = truncated || decoded.cut;
  }
  if (!isTextual(contentType) || looksBinary(bytes)) return described({ size, contentType, kind: 'binary', truncated: false });
  const text = bytes.subarray(0, limit).toString('utf8');
  if (!truncated && /json/i.test(contentType ?? '')) {
    try {
      return described({ size, contentType, kind: 'json', json: redactValue(JSON.parse(text), keys), truncated });
    } catch {
      // Not JSON after all: shown as text.
    }
  }
  return described({ size, contentType, kind: 'text', text: redactText(text, keys), truncated });
}

type Decoder = (bytes: Buffer, options: zlib.ZlibOptions & zlib.BrotliOptions) => Buffer;
const zstd = (zlib as unknown as { zstdDecompressSync?: Decoder }).zstdDecompressSync;
const DECODERS: Record<string, { decode: Decoder; flush: number } | undefined> = {
  gzip: { decode: zlib.gunzipSync, flush: zlib.constants.Z_SYNC_FLUSH },
  'x-gzip': { decode: zlib.gunzipSync, flush: zlib.constants.Z_SYNC_FLUSH },
  deflate: { decode: inflateAny, flush: zlib.constants.Z_SYNC_FLUSH },
  br: { decode: zlib.brotliDecompressSync, flush: zlib.constants.BROTLI_OPERATION_FLUSH },
  ...(zstd ? { zstd: { decode: zstd, flush: 0 } } : {}),
};

/** `deflate` is zlib-wrapped by the RFC, raw in some servers: both are read. */
function inflateAny(bytes: Buffer, options: zlib.ZlibOptions): Buffer {
  try {
    return zlib.inflateSync(bytes, options);
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw err;
    return zlib.inflateRawSync(bytes, options);
  }
}

/**
 * The body decoded, up to about `limit` + 1 bytes (a body cut when it was kept decodes as far as
 * it goes); null for an encoding this Node cannot read, or bytes that are not in it. One that
 * inflates past the limit (a long body, or a compression bomb) is decoded from the longest part
 * of its input that stays within it: zlib stops at the limit by throwing, not by cutting, so
 * that part is found by halving (each try stops as soon as it passes the limit).
 */
function decode(coding: string, bytes: Buffer, limit: number): { bytes: Buffer; cut: boolean } | null {
  const decoder = DECODERS[coding];
  if (decoder === undefined) return null;
  const attempt = (input: Buffer): Buffer | 'too large' | null => {
    try {
      return decoder.decode(input, { finishFlush: decoder.flush, maxOutputLength: limit + 1 });
    } catch (err) {
      return (err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE' ? 'too large' : null;
    }
  };
  const whole = attempt(bytes);
  if (whole !== 'too large') return whole && { bytes: whole, cut: whole.length > limit };
  let fits = 0;
  let over = bytes.length;
  let best: Buffer = Buffer.alloc(0);
  while (over - fits > 1) {
    const mid = (fits + over) >>> 1;
    const out = attempt(bytes.subarray(0, mid));
    if (out === 'too large') over = mid;
    else {
      fits = mid;
      if (out !== null && out.length >= best.length) best = out;
    }
  }
  return { bytes: best, cut: true };
}

/**
 * Describe a body a parser turned into a value (req.body from express.json or urlencoded), from
 * the bounded copy the request's thread made: `cut` says that copy left out what did not fit.
 */
export function describeParsed(value: unknown, cut: boolean, received: number, contentType: string | undefined, limit: number, keys: string[]): BodyData | undefined {
  if (value === undefined) return undefined;
  const redacted = redactValue(value, keys);
  const text = JSON.stringify(redacted) ?? '';
  // The size is what came over the wire, when the client said; else the size of what the parser made of it.
  const size = Number.isSafeInteger(received) && received >= 0 ? received : Buffer.byteLength(text);
  // A copy cut on the request's thread is already about the limit: it stays structured.
  if (cut || text.length <= limit + 16) return { size, contentType, kind: 'json', json: redacted, truncated: cut };
  return { size, contentType, kind: 'text', text: text.slice(0, limit), truncated: true };
}

/** The content type a body is described with: the Content-Type header's. */
export const typeOf = (headers: Record<string, unknown>): string | undefined => (headers['content-type'] === undefined ? undefined : String(headers['content-type']));

/** NUL bytes or invalid UTF-8 in the first KiB: not text, whatever the Content-Type says. */
function looksBinary(bytes: Buffer): boolean {
  const head = bytes.subarray(0, 1024);
  if (head.includes(0)) return true;
  const decoded = head.toString('utf8');
  const replaced = decoded.split('\uFFFD').length - 1;
  return replaced > 8 && replaced > decoded.length / 10;
}
