import type { WorkContext } from './context.js';
import { insideOf, MAX_QUERIES, sinceStart } from './inside.js';

/** A body or attachment content as it crosses to the writer: text, bytes, or what it was when neither (a stream, a path). */
export type MailContent = string | Uint8Array | { kept: false; what: string };

export interface MailAttachment {
  filename?: string;
  contentType?: string;
  cid?: string;
  /** Bytes, when the content was given as text or bytes. */
  size?: number;
  content?: MailContent;
}

/** A message as the app gave it to nodemailer, copied on the call (within the request's body limit). */
export interface MailMessage {
  from?: unknown;
  to?: unknown;
  cc?: unknown;
  bcc?: unknown;
  replyTo?: unknown;
  subject?: string;
  date?: string;
  messageId?: string;
  headers?: unknown;
  text?: MailContent;
  html?: MailContent;
  attachments: MailAttachment[];
  /** Content past the limit was left out. */
  cut?: true;
}

/** One message sent (nodemailer's sendMail), from the call to the transport's answer. Times are ms since arrival. */
export interface MailEntry {
  transport: string;
  message: MailMessage;
  start: number;
  end: number;
  /** What the transport answered: its message id, accepted and rejected addresses, the server's response. */
  info: unknown;
  error: unknown;
}

/**
 * What one request keeps of its messages' bodies and attachments, in all: a request that sends
 * hundreds would otherwise store (and its panel read) tens of megabytes. Past it, a message keeps
 * its addresses, subject and headers.
 */
export const MAIL_KEPT = 1024 * 1024;

/** A message given to sendMail: copied within the body limit and what is left of the request's MAIL_KEPT. */
export function mailStarted(ctx: WorkContext, transport: string, data: unknown): MailEntry | undefined {
  const inside = insideOf(ctx);
  if (inside.mails.length >= MAX_QUERIES) return undefined;
  const message = mailOf(data, Math.min(ctx.recorder.bodyLimit, MAIL_KEPT - inside.mailKept));
  inside.mailKept += keptOf(message);
  const entry: MailEntry = { transport, message, start: sinceStart(ctx), end: -1, info: undefined, error: undefined };
  inside.mails.push(entry);
  return entry;
}

const sizeOf = (content: MailContent | undefined) => (typeof content === 'string' ? content.length : content instanceof Uint8Array ? content.byteLength : 0);
const keptOf = (m: MailMessage) => sizeOf(m.text) + sizeOf(m.html) + m.attachments.reduce((sum, a) => sum + sizeOf(a.content), 0);

export function mailEnded(ctx: WorkContext, entry: MailEntry | undefined, error: unknown, info: unknown): void {
  if (entry === undefined || entry.end >= 0) return;
  entry.end = sinceStart(ctx);
  if (error !== undefined && error !== null) entry.error = error;
  else entry.info = info;
}

const ADDRESS_FIELDS = ['from', 'to', 'cc', 'bcc', 'replyTo'] as const;

/**
 * The message's fields, copied as the app gave them to sendMail (nodemailer changes its data as it
 * sends, and streams are read once): text and bytes within `limit` in all, anything else described.
 */
function mailOf(data: unknown, limit: number): MailMessage {
  const d = (data ?? {}) as Record<string, unknown>;
  let left = limit;
  const message: MailMessage = { attachments: [] };
  const content = (value: unknown): MailContent | undefined => {
    if (value === undefined || value === null) return undefined;
    if (typeof value === 'string' || value instanceof Uint8Array) {
      const size = typeof value === 'string' ? value.length : value.byteLength;
      if (size > left) {
        message.cut = true;
        const kept = value.slice(0, Math.max(left, 0));
        left = 0;
        return typeof kept === 'string' ? kept : new Uint8Array(kept);
      }
      left -= size;
      return typeof value === 'string' ? value : new Uint8Array(value);
    }
    const path = (value as { path?: unknown; href?: unknown }).path ?? (value as { href?: unknown }).href;
    return { kept: false, what: typeof path === 'string' ? path : typeof (value as { pipe?: unknown }).pipe === 'function' ? 'a stream' : typeof value };
  };
  for (const field of ADDRESS_FIELDS) if (d[field] !== undefined) message[field] = addressesOf(d[field]);
  if (d.subject !== undefined) message.subject = String(d.subject);
  if (d.date !== undefined) message.date = d.date instanceof Date ? d.date.toISOString() : String(d.date);
  if (typeof d.messageId === 'string') message.messageId = d.messageId;
  if (d.headers !== null && typeof d.headers === 'object') message.headers = { ...(d.headers as object) };
  message.text = content(d.text);
  message.html = content(d.html);
  const attachments = Array.isArray(d.attachments) ? d.attachments : [];
  for (const a of attachments.slice(0, 50)) {
    const given = (a ?? {}) as Record<string, unknown>;
    const attachment: MailAttachment = {};
    const path = typeof given.path === 'string' ? given.path : typeof given.href === 'string' ? given.href : undefined;
    if (typeof given.filename === 'string') attachment.filename = given.filename;
    else if (path !== undefined) attachment.filename = path.split(/[\\/]/).pop();
    if (typeof given.contentType === 'string') attachment.contentType = given.contentType;
    if (typeof given.cid === 'string') attachment.cid = given.cid;
    const raw = given.content;
    if (typeof raw === 'string') attachment.size = Buffer.byteLength(raw, given.encoding === 'base64' ? 'base64' : 'utf8');
    else if (raw instanceof Uint8Array) attachment.size = raw.byteLength;
    attachment.content = typeof raw === 'string' && given.encoding === 'base64' ? content(Buffer.from(raw, 'base64')) : content(raw ?? (path !== undefined ? { path } : undefined));
    message.attachments.push(attachment);
  }
  return message;
}

/** Addresses as text: nodemailer takes strings, lists of them, and { name, address } objects. */
function addressesOf(value: unknown): string[] {
  const list = Array.isArray(value) ? value : typeof value === 'string' ? value.split(/,(?=(?:[^"]*"[^"]*")*[^"]*$)/) : [value];
  return list.slice(0, 100).map((a) => {
    if (a !== null && typeof a === 'object') {
      const { name, address } = a as { name?: unknown; address?: unknown };
      return name ? `"${String(name)}" <${String(address)}>` : String(address);
    }
    return String(a).trim();
  }).filter((a) => a !== '');
}
