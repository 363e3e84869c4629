import { readFileSync } from 'node:fs';
import type { Config } from '@tasksvc/runtime';
import type { SendMailOptions, Transporter } from 'nodemailer';
import { emailMessage, withReceiverAnswer } from '../domain/messages.ts';
import { single, str, type Channel } from './channel.ts';

/** What the notifier uses of an SMTP transport. */
export interface Mailer {
  sendMail(message: SendMailOptions): Promise<unknown>;
  close(): void;
}

/**
 * The SMTP transport: STARTTLS required on a plain port, or implicit TLS when SMTP_SECURE. nodemailer
 * (~440 KB of source) is imported with the first mail, not at start (issue 58, Memory); the CA file is
 * read now, so a bad one still stops the start.
 */
export function createMailer(config: Config): Mailer | null {
  if (!config.SMTP_HOST) return null;
  const options = {
    host: config.SMTP_HOST,
    port: config.SMTP_PORT,
    secure: config.SMTP_SECURE,
    requireTLS: !config.SMTP_SECURE,
    ...(config.SMTP_USER ? { auth: { user: config.SMTP_USER, pass: config.SMTP_PASS ?? '' } } : {}),
    ...(config.SMTP_TLS_CA_FILE ? { tls: { ca: readFileSync(config.SMTP_TLS_CA_FILE, 'utf8') } } : {}),
    connectionTimeout: 15_000,
    greetingTimeout: 15_000,
    socketTimeout: 30_000,
  };
  let transport: Promise<Transporter> | undefined;
  const open = () => (transport ??= import('nodemailer').then(({ default: nodemailer }) => nodemailer.createTransport(options)));
  return {
    sendMail: async (message) => (await open()).sendMail(message),
    close: () => void transport?.then((t) => t.close()),
  };
}

/** Mail through the operator's SMTP server, to the user's sign-in address unless they name another. */
export const email: Channel = {
  secretFields: [],
  requiredSecrets: [],
  availability: { available: (config) => Boolean(config.SMTP_HOST), reason: 'e-mail is not set up on this server; ask its operator' },
  async prepare(config, ctx) {
    config.address = (config.address as string | null) ?? ctx.email;
  },
  // mail goes only to the address its owner confirmed by the link mailed to it (email-confirmation.ts)
  waiting: (row) =>
    row.confirmedAddress !== null && row.confirmedAddress === str(row.config.address)
      ? null
      : `${str(row.config.address) ?? 'the address'} is waiting for confirmation: open the link mailed to it (save the channel again for a new link)`,
  targets: ({ config: env, mailer }, { config }) =>
    single('email', async (n) => {
      if (!mailer) return { kind: 'failed', error: 'e-mail is not set up on this server' };
      try {
        await mailer.sendMail(emailMessage(env.SMTP_FROM!, str(config.address)!, n, env.PUBLIC_APP_URL));
        return { kind: 'sent' };
      } catch (err) {
        return smtpFailure(err);
      }
    }),
};

/** A failed send as the user is told it (test results, the history, a confirmation mail not sent). */
export function smtpFailure(err: unknown): { kind: 'failed' | 'retry'; error: string } {
  const e = err as { responseCode?: number; response?: string; code?: string; message: string };
  // a reply of the mail server is its words, labelled as such; without one the connection failed on our side
  const error = e.response ? withReceiverAnswer(e.responseCode ? `SMTP ${e.responseCode}` : `${e.code ?? 'SMTP'} error`, e.response) : `${e.code ?? 'SMTP'}: ${e.message}`;
  // 5xx SMTP replies are permanent (bad recipient, auth); anything else is transient
  return { kind: e.responseCode && e.responseCode >= 500 ? 'failed' : 'retry', error };
}
