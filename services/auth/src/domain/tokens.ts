import { createHmac, randomBytes } from 'node:crypto';
import { sha256Hex } from '@tasksvc/runtime';

/** API keys read `ts_live_<43 base64url characters>`: a neutral, greppable prefix (secret scanners key on it). */
export const API_KEY_PREFIX = 'ts_live_';
const API_KEY_RE = /^ts_live_[A-Za-z0-9_-]{43}$/;

export function generateApiKey(): { key: string; hash: string; displayPrefix: string } {
  const key = `${API_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
  return { key, hash: sha256Hex(key), displayPrefix: key.slice(0, API_KEY_PREFIX.length + 6) };
}

/** The hash to look a presented key up by, or null when it cannot be one of ours. */
export function apiKeyLookupHash(presented: string): string | null {
  return API_KEY_RE.test(presented) ? sha256Hex(presented) : null;
}

/** `Authorization: Bearer <token>` → token; anything else → null. */
export function bearerToken(authorization: string | undefined): string | null {
  if (!authorization) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  return m ? m[1]! : null;
}

/** A session cookie value: 32 random bytes, base64url. */
export function generateSessionToken(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * What the sessions table stores for a cookie value: HMAC-SHA256 keyed with AUTH_SECRET. A tampered
 * cookie matches no row; a rotated AUTH_SECRET matches no row either, which signs everyone out.
 */
export function sessionTokenHash(authSecret: string, token: string): string {
  return createHmac('sha256', authSecret).update(token).digest('hex');
}

/** Sessions last 30 days and are extended at most once a day (Auth.js's database-session defaults). */
export const SESSION_MAX_AGE_SECONDS = 30 * 24 * 60 * 60;
export const SESSION_UPDATE_AGE_SECONDS = 24 * 60 * 60;
