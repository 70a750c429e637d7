import { isIP } from 'node:net';
import type { Check } from '../recording/checks.js';
import type { FieldError } from '../recording/validations.js';
import { hide } from './hidden.js';
import { isSecretKey, redactText, redactValue } from './redact.js';

/**
 * Checks as stored: reasons redacted as text, fields by key; a failing field's value is hidden
 * when the field is named like a secret or is a cookie or a header (redactValue reads
 * express-validator's `{ field, location, value }` as one field). What a library was handed may
 * be the credential itself: a rate limit's key is shown only when it is an address (an app keys
 * by `x-api-key` as often), and a user that is no object (a strategy that passes the token on as
 * the user) only by its type. Both are hidden everywhere else in the record too.
 */
export function redactChecks(checks: Check[], keys: string[], body?: unknown): Check[] {
  return checks.map((check) => {
    const fields = check.fields === undefined ? undefined : { ...check.fields };
    if (fields !== undefined) {
      if (check.library === 'express-rate-limit' && fields.key !== undefined && !isAddress(fields.key)) fields.key = hide(fields.key, `(a ${typeof fields.key}, not an address: hidden)`);
      if (fields.user !== undefined && (fields.user === null || typeof fields.user !== 'object')) fields.user = hide(fields.user, `(a ${fields.user === null ? 'null' : typeof fields.user})`);
    }
    const quoted = fields === undefined ? [] : secretValues(fields.errors, keys, body);
    if (quoted.length > 0) fields!.errors = (fields!.errors as FieldError[]).map((e) => (typeof e?.message === 'string' ? { ...e, message: cutOut(e.message, quoted) } : e));
    return {
      ...check,
      reason: redactText(cutOut(check.reason, quoted), keys),
      ...(fields === undefined ? {} : { fields: redactValue(fields, keys) as Record<string, unknown> }),
    };
  });
}

/**
 * The values of a validation's failing fields named like secrets: a library's message may quote
 * the value it refused (joi's `with value "pw7ab12"`, valibot's `but received "pw7ab12"`), which
 * is cut from the message and the reason at any length, not only where the gate would cut it. A
 * library that keeps no value (zod: a refine's message may still quote it) has it read from the
 * request's parsed body, by the field's path.
 */
function secretValues(errors: unknown, keys: string[], body: unknown): string[] {
  if (!Array.isArray(errors)) return [];
  const out: string[] = [];
  for (const e of errors as FieldError[]) {
    if (typeof e?.field !== 'string' || !isSecretKey(e.field, keys)) continue;
    const value = e.value !== undefined ? e.value : at(body, e.field);
    if (typeof value === 'string' && value !== '') out.push(value);
  }
  return out.sort((a, b) => b.length - a.length);
}

/** The value at a dotted path of a parsed body (own data properties only), if there is one. */
function at(value: unknown, path: string): unknown {
  for (const step of path.split('.')) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, step)) return undefined;
    const descriptor = Object.getOwnPropertyDescriptor(value, step);
    value = descriptor !== undefined && 'value' in descriptor ? descriptor.value : undefined;
  }
  return value;
}

/** A value of fewer than 4 characters is cut where it is quoted only: elsewhere it is as likely a word's letters. */
function cutOut(text: string, values: string[]): string {
  for (const value of values) {
    if (value.length >= 4) text = text.split(value).join(hide(value));
    else for (const q of ['"', "'", '`']) text = text.split(`${q}${value}${q}`).join(`${q}${hide(value)}${q}`);
  }
  return text;
}

/** An IP address, or one that express-rate-limit made a subnet of (`2001:db8::/56`). */
const isAddress = (key: unknown): boolean => typeof key === 'string' && isIP(key.replace(/\/\d{1,3}$/, '')) !== 0;
