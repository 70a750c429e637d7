import type { Check } from '../recording/checks.js';
import { isSecretKey, REDACTED, redactText, redactValue } from './redact.js';

/**
 * Checks as stored: reasons redacted as text, fields by key, and a failing field's value hidden
 * when the field is named like a secret (express-validator's `{ path: 'password', value }`: the
 * key that names the secret is the path, not `value`).
 */
export function redactChecks(checks: Check[], keys: string[]): Check[] {
  return checks.map((check) => ({
    ...check,
    reason: redactText(check.reason, keys),
    ...(check.fields === undefined ? {} : { fields: redactValue(hideFieldValues(check.fields, keys), keys) as Record<string, unknown> }),
  }));
}

function hideFieldValues(fields: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  const errors = fields.errors;
  if (!Array.isArray(errors)) return fields;
  return {
    ...fields,
    errors: errors.map((e: Record<string, unknown>) => (e !== null && typeof e === 'object' && 'value' in e && isSecretKey(String(e.field ?? ''), keys) ? { ...e, value: REDACTED } : e)),
  };
}
