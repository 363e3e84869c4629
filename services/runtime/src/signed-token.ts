import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Signed tokens for links mailed or pushed to a user (a reminder's Done / Snooze, an e-mail address's
 * confirmation): `<base64url claims>.<base64url HMAC-SHA256 of them, first 128 bits>`. The claims
 * are packed by the caller in a fixed number of bytes, so a link stays short enough for a URL path
 * segment; the key is derived for one purpose (`purposeKey`), so a token of one kind is never
 * accepted as another. Expiry and single use are the caller's claims and records.
 */
const mac = (key: Buffer, claims: Buffer) => createHmac('sha256', key).update(claims).digest().subarray(0, 16);

export function signToken(key: Buffer, claims: Buffer): string {
  return `${claims.toString('base64url')}.${mac(key, claims).toString('base64url')}`;
}

/** The claims of a token signed with `key` and `size` bytes long; null when it is not one. */
export function openToken(key: Buffer, token: string, size: number): Buffer | null {
  const [text, sig, extra] = token.split('.');
  if (!text || !sig || extra !== undefined) return null;
  const claims = Buffer.from(text, 'base64url');
  const given = Buffer.from(sig, 'base64url');
  const expected = mac(key, claims);
  if (claims.length !== size || given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  return claims;
}

/** UUID ⇄ its 16 bytes, for packing claims. */
export const uuidBytes = (id: string): Buffer => Buffer.from(id.replaceAll('-', ''), 'hex');
export const uuidText = (b: Buffer): string => b.toString('hex').replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, '$1-$2-$3-$4-$5');
