import { randomBytes } from 'node:crypto';
import { openToken, signToken, uuidBytes, uuidText } from '@tasksvc/runtime/signed-token.ts';

/**
 * The link that confirms an e-mail channel's address (issue 56 #2), signed as a reminder's action
 * links are (runtime signed-token.ts) under the notifier's own key for this purpose. Claims, 33
 * bytes: user id, a 96-bit nonce, expiry in seconds. The channel row keeps the nonce of the one
 * link that may still confirm it (a new address, or a new link, replaces it), and confirming clears
 * it: a link works once, and only for the address it was mailed to.
 */

export interface ConfirmClaims {
  userId: string;
  /** 24 hex digits, as stored in the channel row */
  nonce: string;
  /** ms, whole seconds */
  expires: number;
}

/** How long a confirmation link works. */
export const CONFIRM_LIFETIME_MS = 3 * 86_400_000;

const SIZE = 33;

export function confirmLink(key: Buffer, userId: string, now: Date): { token: string; nonce: string } {
  const nonce = randomBytes(12).toString('hex');
  const b = Buffer.alloc(SIZE);
  uuidBytes(userId).copy(b, 0);
  Buffer.from(nonce, 'hex').copy(b, 16);
  b.writeUIntBE(Math.floor((now.getTime() + CONFIRM_LIFETIME_MS) / 1000), 28, 5);
  return { token: signToken(key, b), nonce };
}

export type ConfirmCheck = { ok: true; claims: ConfirmClaims } | { ok: false; why: 'invalid' | 'expired' };

/** `keys`: every key a link may have been signed with (the current one first). */
export function readConfirmLink(keys: readonly Buffer[], token: string, now: Date): ConfirmCheck {
  let b: Buffer | null = null;
  for (const key of keys) if ((b = openToken(key, token, SIZE))) break;
  if (!b) return { ok: false, why: 'invalid' };
  const expires = b.readUIntBE(28, 5) * 1000;
  if (now.getTime() > expires) return { ok: false, why: 'expired' };
  return { ok: true, claims: { userId: uuidText(b.subarray(0, 16)), nonce: b.subarray(16, 28).toString('hex'), expires } };
}
