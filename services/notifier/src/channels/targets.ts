import { readFileSync } from 'node:fs';
import type { NotificationChannelType } from '@tasksvc/proto';
import { decryptSecret, OutboundError, signBody, type Config, type Outbound, type Pool } from '@tasksvc/runtime';
import nodemailer, { type Transporter } from 'nodemailer';
import webpush from 'web-push';
import { listChannels, listPushSubscriptions, removePushSubscriptionById, type ChannelRow } from '../db/store.ts';
import { emailMessage, httpAlertBody, judgeHttp, ntfyMessage, pushoverMessage, pushPayload, telegramMessage, type HttpMessage, type Notice, type SendOutcome } from '../domain/messages.ts';

/** One place a notification goes: a channel, and for push one device. */
export interface Target {
  channel: NotificationChannelType;
  /** 'default', or the push subscription id */
  target: string;
  send(n: Notice): Promise<SendOutcome>;
}

export interface SenderDeps {
  config: Config;
  pool: Pool;
  outbound: Outbound;
  mailer: Transporter | null;
}

const HTTP_TIMEOUT_MS = 10_000;

/** Operator-side availability: email needs SMTP_HOST, push needs the VAPID key pair. */
export function channelAvailable(config: Config, type: NotificationChannelType): boolean {
  if (type === 'email') return Boolean(config.SMTP_HOST);
  if (type === 'push') return Boolean(config.PUBLIC_VAPID_PUBLIC_KEY && config.VAPID_PRIVATE_KEY);
  return true;
}

/** The SMTP transport: STARTTLS required on a plain port, or implicit TLS when SMTP_SECURE. */
export function createMailer(config: Config): Transporter | null {
  if (!config.SMTP_HOST) return null;
  return nodemailer.createTransport({
    host: config.SMTP_HOST,
    port: config.SMTP_PORT,
    secure: config.SMTP_SECURE,
    requireTLS: !config.SMTP_SECURE,
    ...(config.SMTP_USER ? { auth: { user: config.SMTP_USER, pass: config.SMTP_PASS ?? '' } } : {}),
    ...(config.SMTP_TLS_CA_FILE ? { tls: { ca: readFileSync(config.SMTP_TLS_CA_FILE, 'utf8') } } : {}),
    connectionTimeout: 15_000,
    greetingTimeout: 15_000,
    socketTimeout: 30_000,
  });
}

export async function sendHttp(outbound: Outbound, msg: HttpMessage, opts: { push?: boolean } = {}): Promise<SendOutcome> {
  try {
    const res = await outbound.request({ url: msg.url, method: msg.method, headers: msg.headers, body: msg.body, timeoutMs: HTTP_TIMEOUT_MS, maxResponseBytes: 4096 });
    return judgeHttp(res.status, res.status >= 300 ? res.body : '', opts);
  } catch (err) {
    if (!(err instanceof OutboundError)) throw err;
    if (err.kind === 'blocked' || err.kind === 'invalid_url') return { kind: 'failed', error: `URL refused: ${err.message}` };
    return { kind: 'retry', error: err.message };
  }
}

/** Stored secrets, decrypted; a key problem becomes a permanent failure with a clear reason. */
export function readSecrets(config: Config, row: ChannelRow): Record<string, string> | { error: string } {
  if (!row.secrets_enc) return {};
  if (!config.TOTP_ENCRYPTION_KEY) return { error: 'channel secrets cannot be read: TOTP_ENCRYPTION_KEY is not set' };
  try {
    return JSON.parse(decryptSecret(config.TOTP_ENCRYPTION_KEY, row.secrets_enc)) as Record<string, string>;
  } catch {
    return { error: 'channel secrets cannot be decrypted (was TOTP_ENCRYPTION_KEY changed?); save the channel again' };
  }
}

const str = (v: unknown): string | null => (typeof v === 'string' && v ? v : null);
const num = (v: unknown): number | null => (typeof v === 'number' ? v : null);

/**
 * Every target of a user's channels. `onlyType` selects one channel (the test endpoint, which also
 * reaches a disabled channel); otherwise only enabled, available channels count.
 */
export async function targetsFor(deps: SenderDeps, userId: string, onlyType?: NotificationChannelType): Promise<Target[]> {
  const { config, outbound } = deps;
  const appUrl = config.PUBLIC_APP_URL;
  const rows = (await listChannels(deps.pool, userId)).filter((r) => (onlyType ? r.type === onlyType : r.enabled) && channelAvailable(config, r.type));
  const out: Target[] = [];
  for (const row of rows) {
    const c = row.config;
    const secrets = readSecrets(config, row);
    const fixed = (channel: NotificationChannelType, send: (n: Notice, s: Record<string, string>) => Promise<SendOutcome>): Target => ({
      channel,
      target: 'default',
      send: async (n) => ('error' in secrets && typeof secrets.error === 'string' ? { kind: 'failed', error: secrets.error } : send(n, secrets)),
    });
    switch (row.type) {
      case 'http-alert':
        out.push(
          fixed('http-alert', (n, s) => {
            const body = httpAlertBody(n, new Date());
            const headers: Record<string, string> = { 'content-type': 'application/json', 'X-Service-Event': 'service.notification' };
            if (s.secret) headers['X-Service-Signature'] = signBody(s.secret, body);
            return sendHttp(outbound, { url: str(c.url)!, method: 'POST', headers, body });
          }),
        );
        break;
      case 'ntfy':
        out.push(
          fixed('ntfy', (n, s) =>
            sendHttp(outbound, ntfyMessage({ server: str(c.server) ?? config.NTFY_DEFAULT_SERVER, topic: str(c.topic)!, priority: num(c.priority), token: s.token ?? null }, n, appUrl)),
          ),
        );
        break;
      case 'pushover':
        out.push(
          fixed('pushover', (n, s) =>
            sendHttp(outbound, pushoverMessage(config.PUSHOVER_API_URL, { appToken: s.appToken!, userKey: s.userKey!, device: str(c.device), priority: num(c.priority) }, n, appUrl)),
          ),
        );
        break;
      case 'telegram':
        out.push(fixed('telegram', (n, s) => sendHttp(outbound, telegramMessage(config.TELEGRAM_API_URL, { botToken: s.botToken!, chatId: str(c.chatId)! }, n, appUrl))));
        break;
      case 'email': {
        const mailer = deps.mailer;
        out.push(
          fixed('email', async (n) => {
            if (!mailer) return { kind: 'failed', error: 'email is not available: SMTP_HOST is not set' };
            try {
              await mailer.sendMail(emailMessage(config.SMTP_FROM!, str(c.address)!, n, appUrl));
              return { kind: 'sent' };
            } catch (err) {
              const e = err as { responseCode?: number; code?: string; message: string };
              // 5xx SMTP replies are permanent (bad recipient, auth); anything else is transient
              if (e.responseCode && e.responseCode >= 500) return { kind: 'failed', error: `SMTP ${e.responseCode}: ${e.message}` };
              return { kind: 'retry', error: `${e.code ?? 'SMTP'}: ${e.message}` };
            }
          }),
        );
        break;
      }
      case 'push': {
        for (const sub of await listPushSubscriptions(deps.pool, userId)) {
          out.push({
            channel: 'push',
            target: sub.id,
            send: async (n) => {
              const details = webpush.generateRequestDetails({ endpoint: sub.endpoint, keys: { p256dh: sub.p256dh, auth: sub.auth } }, pushPayload(n), {
                vapidDetails: { subject: config.VAPID_CONTACT, publicKey: config.PUBLIC_VAPID_PUBLIC_KEY!, privateKey: config.VAPID_PRIVATE_KEY! },
                TTL: 24 * 3600,
                urgency: 'normal',
                contentEncoding: 'aes128gcm',
              });
              const headers: Record<string, string> = {};
              for (const [k, v] of Object.entries(details.headers)) if (k.toLowerCase() !== 'content-length') headers[k] = String(v);
              const outcome = await sendHttp(outbound, { url: details.endpoint, method: 'POST', headers, body: details.body }, { push: true });
              // the push service says this device unsubscribed: forget it
              if (outcome.kind === 'gone') await removePushSubscriptionById(deps.pool, sub.id);
              return outcome;
            },
          });
        }
        break;
      }
    }
  }
  return out;
}
