import { ECDH } from 'node:crypto';

/**
 * The keys of a Web Push subscription (RFC 8291): `p256dh` an uncompressed P-256 point (0x04, x, y:
 * 65 bytes) that lies on the curve, `auth` a 16-byte secret, both base64url. Checked at subscribe time
 * so a device that can never be encrypted to is refused with the field named, instead of failing every
 * delivery later (#56.8). The request contract itself only checks the alphabet (older gateways send it).
 */
export function pushKeyIssues(keys: { p256dh: string; auth: string }): { path: string; message: string }[] {
  const issues: { path: string; message: string }[] = [];
  const p256dh = Buffer.from(keys.p256dh, 'base64url');
  if (!(p256dh.length === 65 && p256dh[0] === 0x04 && onCurve(p256dh))) {
    issues.push({ path: 'body.keys.p256dh', message: 'must be the base64url uncompressed P-256 public key (65 bytes, a point on the curve)' });
  }
  if (Buffer.from(keys.auth, 'base64url').length !== 16) issues.push({ path: 'body.keys.auth', message: 'must be the base64url 16-byte auth secret' });
  return issues;
}

function onCurve(point: Buffer): boolean {
  try {
    ECDH.convertKey(point, 'prime256v1'); // OpenSSL refuses a point that is not on the curve
    return true;
  } catch {
    return false;
  }
}
