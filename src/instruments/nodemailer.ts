import { createRequire } from 'node:module';
import path from 'node:path';
import { requestOf } from '../recording/inside.js';
import { mailEnded, mailStarted } from '../recording/mails.js';
import { ownerOf, type DriverAdapter } from './driver.js';
import { esmCopy } from './esm-copy.js';

type Callback = (err: unknown, info?: unknown) => unknown;
interface Mailer {
  transporter?: { name?: unknown };
}

const hooked = new WeakSet<object>();

/**
 * Every message an app sends with nodemailer, whatever its transport: Mailer#sendMail, from the
 * call to the transport's answer. Given no callback, the promise the app gets is made here as
 * nodemailer makes it, so a rejection nobody handles stays the app's.
 */
export const nodemailer: DriverAdapter = {
  name: 'nodemailer',
  panel: 'mail',
  main: /[\\/]node_modules[\\/]nodemailer[^\\/]*[\\/](?:lib|dist[\\/]cjs)[\\/]nodemailer\.js$/,
  matches: (loaded) => typeof (loaded as { createTransport?: unknown })?.createTransport === 'function' && typeof (loaded as { getTestMessageUrl?: unknown }).getTestMessageUrl === 'function',
  hook(_loaded, file, tell) {
    if (file === undefined) return;
    try {
      hookMailer((createRequire(file)(path.join(path.dirname(file), 'mailer', 'index.js')) as { default?: { prototype: object }; prototype?: object }));
    } catch (err) {
      tell(`nodemailer at ${file}: its Mailer was not found (${(err as Error)?.message ?? err}), so its mail is not recorded`);
    }
  },
};

/** nodemailer 10 is also an ES module: the copy an app that imports it runs. */
export async function hookEsmNodemailer(tell: (message: string) => void): Promise<void> {
  try {
    const copy = await esmCopy('nodemailer', (cjs) => (/[\\/]dist[\\/]cjs[\\/]nodemailer\.js$/.test(cjs) ? path.join(path.dirname(cjs), '..', 'esm', 'mailer', 'index.js') : undefined));
    if (copy) hookMailer(copy.module);
  } catch (err) {
    // A module system that loads no ES module (jest's) runs the CommonJS copy, hooked as any.
    if ((err as Error)?.name === 'SyntaxError') return;
    tell(`nodemailer (ES module): ${(err as Error)?.message ?? err}: its mail is not recorded`);
  }
}

function hookMailer(mod: unknown): void {
  const Mailer = (mod as { default?: { prototype: object } }).default ?? mod;
  const proto = ownerOf((Mailer as { prototype?: object }).prototype, 'sendMail');
  if (proto === undefined || typeof proto.sendMail !== 'function' || hooked.has(proto)) return;
  hooked.add(proto);
  const sendMail = proto.sendMail as (this: Mailer, data: unknown, callback?: Callback) => unknown;
  proto.sendMail = function (this: Mailer, data: unknown, callback?: Callback) {
    const ctx = requestOf();
    let entry;
    try {
      entry = ctx && mailStarted(ctx, String(this.transporter?.name ?? 'unknown'), data);
    } catch {
      entry = undefined;
    }
    if (entry === undefined) return sendMail.call(this, data, callback);
    const sent = (err: unknown, info: unknown) => mailEnded(ctx!, entry, err, info);
    if (typeof callback === 'function') {
      return sendMail.call(this, data, (err, info) => {
        sent(err, info);
        return callback(err, info);
      });
    }
    return new Promise((resolve, reject) => {
      sendMail.call(this, data, (err, info) => {
        sent(err, info);
        if (err) reject(err);
        else resolve(info);
      });
    });
  };
}

interface SentMail {
  message: {
    keepBcc: boolean;
    getEnvelope(): { from: string; to: string[] };
    messageId(): string;
    build(callback: (err: unknown, raw: Buffer) => void): void;
  };
}

/**
 * A nodemailer transport for development that delivers nothing: `nodemailer.createTransport(
 * profiler.mailTransport())`. Each message is built as a transport would send it and answered as
 * accepted; the profile of the request that sent it shows it, with its preview and its .eml.
 */
export function mailTransport() {
  return {
    name: 'web-profiler',
    version: '1',
    send(mail: SentMail, done: (err: unknown, info?: unknown) => void) {
      try {
        mail.message.keepBcc = true;
        const envelope = mail.message.getEnvelope();
        const messageId = mail.message.messageId();
        mail.message.build((err, message) => {
          if (err) done(err);
          else done(null, { envelope, messageId, message, accepted: envelope.to, rejected: [], response: '250 recorded by the web profiler, not delivered' });
        });
      } catch (err) {
        done(err);
      }
    },
  };
}
