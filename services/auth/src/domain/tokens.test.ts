import { describe, expect, it } from 'vitest';
import { parseCookies, serializeSessionCookie, sessionTokenFromCookie } from '@tasksvc/proto';
import { apiKeyLookupHash, bearerToken, generateApiKey, generateSessionToken, sessionTokenHash } from './tokens.ts';

describe('API keys', () => {
  it('have the neutral prefix, a display prefix, and are looked up by hash only when well-formed', () => {
    const k = generateApiKey();
    expect(k.key).toMatch(/^ts_live_[\w-]{43}$/);
    expect(k.key.startsWith(k.displayPrefix)).toBe(true);
    expect(k.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(apiKeyLookupHash(k.key)).toBe(k.hash);
    expect(apiKeyLookupHash(`${k.key}x`)).toBeNull();
    expect(apiKeyLookupHash('momo_live_abc')).toBeNull();
  });

  it('parses only Bearer authorization', () => {
    expect(bearerToken('Bearer abc')).toBe('abc');
    expect(bearerToken('bearer  abc ')).toBe('abc');
    expect(bearerToken('Basic abc')).toBeNull();
    expect(bearerToken(undefined)).toBeNull();
  });
});

describe('session tokens', () => {
  it('are random and stored as an HMAC that depends on AUTH_SECRET', () => {
    const a = generateSessionToken();
    expect(a).toMatch(/^[\w-]{43}$/);
    expect(generateSessionToken()).not.toBe(a);
    const h1 = sessionTokenHash('secret-one-secret-one-secret-one-1', a);
    expect(h1).toBe(sessionTokenHash('secret-one-secret-one-secret-one-1', a));
    expect(sessionTokenHash('secret-two-secret-two-secret-two-2', a)).not.toBe(h1);
    expect(h1).not.toContain(a);
  });

  it('are read from the cookie name of the deployment; the cookie is HttpOnly, Lax, Secure on https', () => {
    expect(sessionTokenFromCookie('a=1; authjs.session-token=tok; b=2', false)).toBe('tok');
    expect(sessionTokenFromCookie('__Host-authjs.session-token=sec', true)).toBe('sec');
    expect(sessionTokenFromCookie('other=1', false)).toBeNull();
    expect(parseCookies('x="quoted"; y=a%20b').get('y')).toBe('a b');
    const c = serializeSessionCookie('tok', new Date(0), true);
    expect(c).toMatch(/^__Host-authjs\.session-token=tok; Path=\/; Expires=.*; HttpOnly; SameSite=Lax; Secure$/);
    expect(serializeSessionCookie('tok', new Date(0), false)).not.toContain('Secure');
  });
});
