import type { CapturedMail } from '../recording/inside-capture.js';
import type { MailContent, MailMessage } from '../recording/mails.js';
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
  if (typeof content === 'string') return redact(content, keys);
  if (content instanceof Uint8Array) {
    return text ? redact(Buffer.from(content).toString('utf8'), keys) : { base64: Buffer.from(content).toString('base64') };
  }
  return content;
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
