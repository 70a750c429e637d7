import type { CapturedMail } from '../recording/inside-capture.js';
import type { MailContent, MailMessage } from '../recording/mails.js';
import { hide } from './hidden.js';
import { redactHeaders, redactMarkup, redactText, redactValue } from './redact.js';

/** Content as stored: text (redacted), bytes as base64, or what it was when it was not kept. */
export type StoredContent = string | { base64: string } | { kept: false; what: string };

export interface StoredMessage extends Omit<MailMessage, 'text' | 'html' | 'attachments'> {
  text?: StoredContent;
  html?: StoredContent;
  attachments: { filename?: string; contentType?: string; cid?: string; size?: number; content?: StoredContent }[];
}

export interface StoredMail extends Omit<CapturedMail, 'message'> {
  message: StoredMessage;
}

const isText = (type: string | undefined) => type === undefined || /^(text\/|application\/(json|xml|javascript))|\+(json|xml)$/i.test(type);

function stored(content: MailContent | undefined, text: boolean, keys: string[], redact = redactText): StoredContent | undefined {
  if (content === undefined) return undefined;
  if (typeof content === 'string') return withoutLinkTokens(redact(content, keys));
  if (content instanceof Uint8Array) {
    return text ? withoutLinkTokens(redact(Buffer.from(content).toString('utf8'), keys)) : { base64: Buffer.from(content).toString('base64') };
  }
  return content;
}

const LINK = /\bhttps?:\/\/[^\s"'<>()]+/gi;
/** A path's word after which comes a one-time code: `/reset/<token>`, `/magic/<token>`, `/invite/<code>`. */
const CODE_BEFORE = /^(reset|reset-?password|password-?reset|magic(-?link)?|login|sign-?in|verify|verification|confirm(ation)?|activate|activation|invite|invitation|token|auth|unsubscribe|approve|claim|access)$/i;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A code's alphabet, letters and digits both: 20 or more without a hyphen (a slug has them), 32 or more with. */
const CODE = /^(?=.*\d)(?=.*[A-Za-z])(?:[A-Za-z0-9_.~=]{20,}|[A-Za-z0-9_.~=-]{32,})$/;

/**
 * A mail's links with the one-time codes in their paths taken out (a reset or magic link in path
 * form: `https://app/reset/<token>`), as a query's `?token=` is: the segment after a word that
 * announces one, and any segment shaped like one (a UUID, a long random string).
 */
function withoutLinkTokens(text: string): string {
  if (!text.includes('://')) return text;
  return text.replace(LINK, (link) => {
    const start = link.indexOf('/', link.indexOf('://') + 3);
    if (start < 0) return link;
    const end = link.slice(start).search(/[?#]/);
    const path = end < 0 ? link.slice(start) : link.slice(start, start + end);
    const segments = path.split('/');
    const out = segments.map((segment, i) => (segment.length >= 6 && (CODE_BEFORE.test(segments[i - 1] ?? '') || UUID.test(segment) || CODE.test(segment)) ? hide(segment) : segment)).join('/');
    return out === path ? link : link.slice(0, start) + out + link.slice(start + path.length);
  });
}

/**
 * A message as stored: bodies redacted like any text (addresses stay: they are what a developer
 * checks), headers like a request's, attachments as text (redacted) or bytes, the transport's
 * answer and an error redacted.
 */
export function redactMail(m: CapturedMail, keys: string[]): StoredMail {
  const message: StoredMessage = {
    ...m.message,
    text: stored(m.message.text, true, keys),
    html: stored(m.message.html, true, keys, redactMarkup),
    headers: m.message.headers === undefined ? undefined : redactHeaders(m.message.headers as Record<string, unknown>, keys),
    subject: m.message.subject === undefined ? undefined : redactText(m.message.subject, keys),
    attachments: m.message.attachments.map((a) => ({ ...a, content: stored(a.content, isText(a.contentType) && typeof a.content === 'string', keys) })),
  };
  return {
    ...m,
    message,
    info: m.info === undefined ? undefined : redactValue(m.info, keys),
    error: m.error && { ...m.error, message: redactText(m.error.message, keys) },
  };
}
