import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';

/**
 * The signed links behind a reminder's "Done" and "Snooze 1 h" buttons (pure: the key is given).
 * A token is `<base64url JSON claims>.<base64url HMAC-SHA256 of that text>`; the key is the tasks
 * service's own, for this purpose only. One notification's two links share a nonce, so the first
 * one used spends both (the tasks service records spent nonces).
 */

export type LinkAction = 'done' | 'snooze';

export interface LinkClaims {
  action: LinkAction;
  taskId: string;
  userId: string;
  /** shared by the links of one notification; recorded when one is used */
  nonce: string;
  /** the instant (ms) after which the link answers 410 */
  expires: number;
}

/** How long a notification's buttons work. */
export const LINK_LIFETIME_MS = 7 * 86_400_000;

const mac = (key: Buffer, text: string) => createHmac('sha256', key).update(text).digest();

export function signLink(key: Buffer, claims: LinkClaims): string {
  const text = Buffer.from(JSON.stringify({ a: claims.action, t: claims.taskId, u: claims.userId, n: claims.nonce, x: claims.expires })).toString('base64url');
  return `${text}.${mac(key, text).toString('base64url')}`;
}

/** Both links of one notification about a task. */
export function notificationLinks(key: Buffer, taskId: string, userId: string, now: Date): Record<LinkAction, string> {
  const base = { taskId, userId, nonce: randomUUID(), expires: now.getTime() + LINK_LIFETIME_MS };
  return { done: signLink(key, { ...base, action: 'done' }), snooze: signLink(key, { ...base, action: 'snooze' }) };
}

export type LinkCheck = { ok: true; claims: LinkClaims } | { ok: false; why: 'invalid' | 'expired' };

/** The claims of a token signed with `key`, if its signature holds and it has not expired. */
export function verifyLink(key: Buffer, token: string, now: Date): LinkCheck {
  const [text, sig, extra] = token.split('.');
  if (!text || !sig || extra !== undefined) return { ok: false, why: 'invalid' };
  const given = Buffer.from(sig, 'base64url');
  const expected = mac(key, text);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, why: 'invalid' };
  let raw: { a?: unknown; t?: unknown; u?: unknown; n?: unknown; x?: unknown };
  try {
    raw = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as typeof raw;
  } catch {
    return { ok: false, why: 'invalid' };
  }
  const { a, t, u, n, x } = raw;
  if ((a !== 'done' && a !== 'snooze') || typeof t !== 'string' || typeof u !== 'string' || typeof n !== 'string' || typeof x !== 'number') return { ok: false, why: 'invalid' };
  if (now.getTime() > x) return { ok: false, why: 'expired' };
  return { ok: true, claims: { action: a, taskId: t, userId: u, nonce: n, expires: x } };
}
