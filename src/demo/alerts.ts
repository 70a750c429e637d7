import nodemailer from 'nodemailer';
import type { WebProfiler } from '../index.js';
import type { PlatformDb } from './platform-db.js';

/** Refusals from one address within a minute that make an alert. */
const BURST = 3;

/**
 * A mail to the admins when one address is refused BURST times within a minute, sent through the
 * profiler's transport: in development it is delivered nowhere and shows on the refused request's
 * mail panel.
 */
export function burstAlerts(db: PlatformDb, profiler: WebProfiler) {
  const transport = nodemailer.createTransport(profiler.options.enabled ? profiler.mailTransport() : { jsonTransport: true });
  return async (ip: string) => {
    const recent = db.refusalsFrom(ip, Date.now() - 60_000);
    if (recent.length !== BURST) return;
    await transport.sendMail({
      from: '"Platform" <platform@localhost>',
      to: db.adminNames().map((name) => `"${name}" <${name}@localhost>`),
      subject: `${BURST} refused sign-ins from ${ip} within a minute`,
      text: `${BURST} sign-ins were refused from ${ip} in the last minute, for: ${recent.join(', ')}.`,
      html: `<h2>Refused sign-ins</h2><p><b>${BURST}</b> sign-ins were refused from <code>${escapeHtml(ip)}</code> in the last minute.</p><ul>${recent.map((u) => `<li>${escapeHtml(u)}</li>`).join('')}</ul>`,
    });
  };
}

const escapeHtml = (value: string) => value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
