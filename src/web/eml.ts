import type { MessageData } from '../collectors/mail.js';
import type { StoredContent } from '../redaction/mail.js';

const CRLF = '\r\n';

/** A header value as RFC 2047 has it where it is not plain ASCII, and never with a line break of its own. */
function headerValue(value: string): string {
  const flat = value.replace(/[\r\n]+/g, ' ');
  return /^[\x20-\x7e]*$/.test(flat) ? flat : `=?UTF-8?B?${Buffer.from(flat).toString('base64')}?=`;
}

const base64Lines = (bytes: Buffer) => (bytes.toString('base64').match(/.{1,76}/g) ?? []).join(CRLF);

function bytesOf(content: StoredContent | undefined): Buffer | undefined {
  if (content === undefined) return undefined;
  if (typeof content === 'string') return Buffer.from(content);
  if ('base64' in content) return Buffer.from(content.base64, 'base64');
  return Buffer.from(`[not kept by the profiler: given as ${content.what}]`);
}

function part(type: string, body: Buffer, extra: string[] = []): string {
  return [`Content-Type: ${type}`, 'Content-Transfer-Encoding: base64', ...extra, '', base64Lines(body)].join(CRLF);
}

function multipart(type: string, parts: string[], boundary: string): string {
  return [`Content-Type: multipart/${type}; boundary="${boundary}"`, '', ...parts.map((p) => `--${boundary}${CRLF}${p}`), `--${boundary}--`, ''].join(CRLF);
}

/**
 * The message as an RFC 5322 file, built again from what the profile stored (bodies redacted,
 * content past the limit left out): its headers, the text and HTML as alternatives, attachments.
 */
export function emlOf(m: MessageData, token: string): string {
  const headers: string[] = [];
  const add = (name: string, value: string | undefined) => value && headers.push(`${name}: ${headerValue(value)}`);
  add('From', m.from.join(', '));
  add('To', m.to.join(', '));
  add('Cc', m.cc.join(', '));
  add('Bcc', m.bcc.join(', '));
  add('Reply-To', m.replyTo.join(', '));
  add('Subject', m.subject);
  add('Date', m.date ? new Date(m.date).toUTCString() : undefined);
  add('Message-ID', m.messageId);
  for (const [name, value] of Object.entries(m.headers)) if (/^[!-9;-~]+$/.test(name)) add(name, Array.isArray(value) ? value.join(', ') : String(value));
  headers.push('MIME-Version: 1.0');
  const boundary = (kind: string) => `----=_web-profiler_${token}_${m.n}_${kind}`;
  const text = bytesOf(m.text);
  const html = bytesOf(m.html);
  const bodies = [text && part('text/plain; charset=utf-8', text), html && part('text/html; charset=utf-8', html)].filter((p): p is string => p !== undefined);
  const body = bodies.length > 1 ? multipart('alternative', bodies, boundary('alt')) : (bodies[0] ?? part('text/plain; charset=utf-8', Buffer.alloc(0)));
  const attachments = m.attachments.map((a) => {
    const name = headerValue(a.filename ?? 'attachment');
    const extra = [`Content-Disposition: attachment; filename="${name.replace(/"/g, "'")}"`, ...(a.cid ? [`Content-ID: <${headerValue(a.cid)}>`] : [])];
    return part(a.contentType ?? 'application/octet-stream', bytesOf(a.content) ?? Buffer.alloc(0), extra);
  });
  const whole = attachments.length > 0 ? multipart('mixed', [body, ...attachments], boundary('mixed')) : body;
  return headers.join(CRLF) + CRLF + whole;
}
