import { isIP } from 'node:net';
import type { Check } from '../recording/checks.js';
import { hide } from './hidden.js';
import { redactText, redactValue } from './redact.js';

/**
 * Checks as stored: reasons redacted as text, fields by key; a failing field's value is hidden
 * when the field is named like a secret or is a cookie or a header (redactValue reads
 * express-validator's `{ field, location, value }` as one field). What a library was handed may
 * be the credential itself: a rate limit's key is shown only when it is an address (an app keys
 * by `x-api-key` as often), and a user that is no object (a strategy that passes the token on as
 * the user) only by its type. Both are hidden everywhere else in the record too.
 */
export function redactChecks(checks: Check[], keys: string[]): Check[] {
  return checks.map((check) => {
    const fields = check.fields === undefined ? undefined : { ...check.fields };
    if (fields !== undefined) {
      if (check.library === 'express-rate-limit' && fields.key !== undefined && !isAddress(fields.key)) fields.key = hide(fields.key, `(a ${typeof fields.key}, not an address: hidden)`);
      if (fields.user !== undefined && (fields.user === null || typeof fields.user !== 'object')) fields.user = hide(fields.user, `(a ${fields.user === null ? 'null' : typeof fields.user})`);
    }
    return {
      ...check,
      reason: redactText(check.reason, keys),
      ...(fields === undefined ? {} : { fields: redactValue(fields, keys) as Record<string, unknown> }),
    };
  });
}

/** An IP address, or one that express-rate-limit made a subnet of (`2001:db8::/56`). */
const isAddress = (key: unknown): boolean => typeof key === 'string' && isIP(key.replace(/\/\d{1,3}$/, '')) !== 0;
