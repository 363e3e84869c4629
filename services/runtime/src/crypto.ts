import { createCipheriv, createDecipheriv, createHash, createHmac, hash, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';

/** Compare two secrets without leaking where they differ (or, via hashing first, their length). */
export function safeEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb) && a.length === b.length;
}

export function sha256Hex(value: string): string {
  return hash('sha256', value, 'hex');
}

/** `sha256=<lowercase hex HMAC-SHA256 of the exact body bytes>`: the spec's X-Service-Signature value. */
export function signBody(secret: string, body: string | Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

export function verifySignature(secret: string, body: string | Buffer, header: string | undefined): boolean {
  if (!header) return false;
  return safeEqual(signBody(secret, body), header);
}

/**
 * AES-256-GCM with a 64-hex-character key. Stored form: `base64(iv):base64(tag):base64(ciphertext)`
 * (12-byte IV), the reference format, so a rotated key is detected as a failed decryption.
 */
export function encryptSecret(keyHex: string, plaintext: string): string {
  const key = Buffer.from(keyHex, 'hex');
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return `${iv.toString('base64')}:${cipher.getAuthTag().toString('base64')}:${ct.toString('base64')}`;
}

export function decryptSecret(keyHex: string, stored: string): string {
  const [iv, tag, ct] = stored.split(':');
  if (!iv || !tag || ct === undefined) throw new Error('malformed encrypted value');
  const decipher = createDecipheriv('aes-256-gcm', Buffer.from(keyHex, 'hex'), Buffer.from(iv, 'base64'));
  decipher.setAuthTag(Buffer.from(tag, 'base64'));
  return Buffer.concat([decipher.update(Buffer.from(ct, 'base64')), decipher.final()]).toString('utf8');
}

/** URL-safe random token with a readable prefix, e.g. `ts_cal_…`. */
export function randomToken(prefix: string, bytes = 32): string {
  return `${prefix}${randomBytes(bytes).toString('base64url')}`;
}

/**
 * A 32-byte key for one purpose, derived (HKDF-SHA256) from a configured secret: keys of different
 * purposes are independent, so one leaking or being rotated touches no other.
 */
export function purposeKey(secret: string, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, 'tasksvc', purpose, 32));
}
