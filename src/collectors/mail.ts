import type { ErrorSummary } from '../recording/inside-capture.js';
import type { StoredContent, StoredMail } from '../redaction/mail.js';
import type { CorePanel } from './collector.js';
import { duration, afterResponse, type AfterResponse } from './inside-layers.js';

export interface MessageData {
  /** 1, 2, … in the request: the preview is at /_profiler/<token>/mail/<n>, the message at …/<n>.eml. */
  n: number;
  /** Sent after the response went out, or answered by the transport after it: see AfterResponse. */
  after?: AfterResponse;
  subject?: string;
  from: string[];
  to: string[];
  cc: string[];
  bcc: string[];
  replyTo: string[];
  date?: string;
  messageId?: string;
  transport: string;
  start: number;
  duration: number;
  error?: ErrorSummary;
  /** What the transport answered (accepted, rejected, the server's response). */
  accepted?: unknown;
  rejected?: unknown;
  response?: unknown;
  headers: Record<string, unknown>;
  text?: StoredContent;
  html?: StoredContent;
  attachments: { filename?: string; contentType?: string; cid?: string; size?: number; content?: StoredContent }[];
  /** Content past the limit was left out. */
  cut?: true;
}

export interface MailData {
  count: number;
  errors: number;
  messages: MessageData[];
}

const list = (value: unknown): string[] => (Array.isArray(value) ? value.map(String) : value === undefined ? [] : [String(value)]);

export function messageData(m: StoredMail, n: number, answered: number): MessageData {
  const info = (m.info ?? {}) as { messageId?: unknown; accepted?: unknown; rejected?: unknown; response?: unknown };
  const data: MessageData = {
    n,
    subject: m.message.subject,
    from: list(m.message.from),
    to: list(m.message.to),
    cc: list(m.message.cc),
    bcc: list(m.message.bcc),
    replyTo: list(m.message.replyTo),
    date: m.message.date,
    messageId: typeof info.messageId === 'string' ? info.messageId : m.message.messageId,
    transport: m.transport,
    start: m.start,
    duration: duration(m.start, m.end),
    headers: (m.message.headers ?? {}) as Record<string, unknown>,
    text: m.message.text,
    html: m.message.html,
    attachments: m.message.attachments.map((a) => ({
      ...a,
      size: a.size ?? (typeof a.content === 'string' ? Buffer.byteLength(a.content) : a.content && 'base64' in a.content ? Buffer.byteLength(a.content.base64, 'base64') : undefined),
    })),
  };
  const after = afterResponse(m.start, m.end, answered);
  if (after !== undefined) data.after = after;
  if (m.message.cut) data.cut = true;
  if (m.error !== undefined) data.error = m.error;
  if (info.accepted !== undefined) data.accepted = info.accepted;
  if (info.rejected !== undefined) data.rejected = info.rejected;
  if (info.response !== undefined) data.response = info.response;
  return data;
}

export const mail: CorePanel<MailData> = {
  id: 'mail',
  title: 'Mail',
  collect(s) {
    const recorded = s.inside?.mails;
    if (recorded === undefined || recorded.length === 0) return undefined;
    const messages = recorded.map((m, i) => messageData(m, i + 1, s.duration));
    return { count: messages.length, errors: messages.filter((m) => m.error).length, messages };
  },
  badge: (data) => data.count,
};
