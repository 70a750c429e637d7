import { createHmac, timingSafeEqual } from 'node:crypto';

/** A compact HS256 JWT: enough for the demo, and readable in the profiler's request panel (redacted). */
export interface Claims {
  sub: string;
  name: string;
  role: string;
  iat: number;
  exp: number;
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const HEADER = b64({ alg: 'HS256', typ: 'JWT' });

export function sign(claims: Claims, secret: string): string {
  const body = `${HEADER}.${b64(claims)}`;
  return `${body}.${createHmac('sha256', secret).update(body).digest('base64url')}`;
}

export function verify(token: string, secret: string, now = Date.now()): Claims | undefined {
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== HEADER) return undefined;
  const expected = createHmac('sha256', secret).update(`${parts[0]}.${parts[1]}`).digest();
  const given = Buffer.from(parts[2], 'base64url');
  // Decoding ignores a last character's spare bits: only the one spelling of the signature is it.
  if (given.length !== expected.length || !timingSafeEqual(given, expected) || given.toString('base64url') !== parts[2]) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) as Claims;
    return typeof claims.exp === 'number' && claims.exp * 1000 > now ? claims : undefined;
  } catch {
    return undefined;
  }
}
