import { randomBytes } from 'node:crypto';
import { openToken, signToken, uuidBytes, uuidText } from '@tasksvc/runtime/signed-token.ts';

/**
 * The signed links behind a reminder's "Done" and "Snooze 1 h" buttons (pure: the key is given).
 * A token is the runtime's signed token (signed-token.ts), the claims packed
 * in 50 bytes (action, task id, user id, a 96-bit nonce, expiry in seconds), so a link stays short
 * enough for a URL path segment (90 characters); the key is the tasks service's own, for this
 * purpose only. One notification's two links share a nonce, so the first
 * one used spends both (the tasks service records spent nonces).
 */

export type LinkAction = 'done' | 'snooze';

export interface LinkClaims {
  action: LinkAction;
  taskId: string;
  userId: string;
  /** shared by the links of one notification (24 hex digits); recorded when one is used */
  nonce: string;
  /** the instant (ms, whole seconds) after which the link answers 410 */
  expires: number;
}

/** How long a notification's buttons work. */
export const LINK_LIFETIME_MS = 7 * 86_400_000;

const ACTIONS: LinkAction[] = ['done', 'snooze'];
const SIZE = 50;

export function signLink(key: Buffer, claims: LinkClaims): string {
  const b = Buffer.alloc(SIZE);
  b[0] = ACTIONS.indexOf(claims.action) + 1;
  uuidBytes(claims.taskId).copy(b, 1);
  uuidBytes(claims.userId).copy(b, 17);
  Buffer.from(claims.nonce, 'hex').copy(b, 33, 0, 12);
  b.writeUIntBE(Math.max(0, Math.floor(claims.expires / 1000)), 45, 5);
  return signToken(key, b);
}

/** Both links of one notification about a task. */
export function notificationLinks(key: Buffer, taskId: string, userId: string, now: Date): Record<LinkAction, string> {
  const base = { taskId, userId, nonce: randomBytes(12).toString('hex'), expires: now.getTime() + LINK_LIFETIME_MS };
  return { done: signLink(key, { ...base, action: 'done' }), snooze: signLink(key, { ...base, action: 'snooze' }) };
}

export type LinkCheck = { ok: true; claims: LinkClaims } | { ok: false; why: 'invalid' | 'expired' };

/** The claims of a token signed with `key`, if its signature holds and it has not expired. */
export function verifyLink(key: Buffer, token: string, now: Date): LinkCheck {
  const claims = openToken(key, token, SIZE);
  if (!claims) return { ok: false, why: 'invalid' };
  const action = ACTIONS[claims[0]! - 1];
  if (!action) return { ok: false, why: 'invalid' };
  const expires = claims.readUIntBE(45, 5) * 1000;
  if (now.getTime() > expires) return { ok: false, why: 'expired' };
  return { ok: true, claims: { action, taskId: uuidText(claims.subarray(1, 17)), userId: uuidText(claims.subarray(17, 33)), nonce: claims.subarray(33, 45).toString('hex'), expires } };
}
