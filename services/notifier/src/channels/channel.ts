import type { NotificationChannelType } from '@tasksvc/proto';
import { OutboundError, type Config, type Outbound, type Pool } from '@tasksvc/runtime';
import type { Scalar, SecretDeclaration } from '../domain/channel-config.ts';
import { judgeHttp, type HttpMessage, type Notice, type SendOutcome } from '../domain/messages.ts';
import type { Mailer } from './email.ts';

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
  mailer: Mailer | null;
}

/** A user's saved channel, with its secrets decrypted. */
export interface SavedChannel {
  userId: string;
  config: Record<string, Scalar>;
  secrets: Record<string, string>;
}

/** A saved channel's row as far as a channel's own checks need it. */
export interface StoredChannel {
  config: Record<string, Scalar>;
  confirmedAddress: string | null;
}

/**
 * A kind of notification channel: one file each in this folder, listed in index.ts. What a channel
 * declares here is the only place it is said (the API and the settings page read it from here).
 */
export interface Channel extends SecretDeclaration {
  /** operator-side availability, with the reason shown when it is missing; always available without */
  availability?: { available(config: Config): boolean; reason: string };
  /** completes validated public settings before they are stored (URL checks, defaults) */
  prepare?(config: Record<string, Scalar>, ctx: { checkUrl: (url: string, path: string) => Promise<string>; email: string }): Promise<void>;
  /** why nothing may be sent on the saved channel yet (e-mail: the address waits for confirmation); null when it may */
  waiting?(row: StoredChannel): string | null;
  /** where one saved channel delivers */
  targets(deps: SenderDeps, saved: SavedChannel): Target[] | Promise<Target[]>;
}

const HTTP_TIMEOUT_MS = 10_000;

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

/** The channel's single target ('default'), sending with the saved settings. */
export function single(channel: NotificationChannelType, send: (n: Notice) => Promise<SendOutcome>): Target[] {
  return [{ channel, target: 'default', send }];
}

export const str = (v: unknown): string | null => (typeof v === 'string' && v ? v : null);
export const num = (v: unknown): number | null => (typeof v === 'number' ? v : null);
