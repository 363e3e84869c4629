import { describe, expect, it } from 'vitest';
import { legacySessionToken, renamedSessionCookies, SESSION_COOKIE_RE, sessionCookieName, sessionTokenFromCookie } from './session-cookie.ts';

describe('the session cookie (#19.11, #56.13)', () => {
  it('over https is __Host-: read first, the legacy __Secure- name after it, never the plain name', () => {
    expect(sessionCookieName(true)).toBe('__Host-authjs.session-token');
    expect(sessionTokenFromCookie('authjs.session-token=planted', true)).toBeNull();
    expect(sessionTokenFromCookie('authjs.session-token=planted; __Host-authjs.session-token=real', true)).toBe('real');
    expect(sessionTokenFromCookie('__Secure-authjs.session-token=old', true)).toBe('old');
    expect(sessionTokenFromCookie('__Secure-authjs.session-token=old; __Host-authjs.session-token=new', true)).toBe('new');
  });

  it('over http is the plain name only', () => {
    expect(sessionCookieName(false)).toBe('authjs.session-token');
    expect(sessionTokenFromCookie('authjs.session-token=t', false)).toBe('t');
    expect(sessionTokenFromCookie('__Secure-authjs.session-token=t; __Host-authjs.session-token=u', false)).toBeNull();
  });

  it('names a legacy token only when it is what the request is signed in with', () => {
    expect(legacySessionToken('__Secure-authjs.session-token=old', true)).toBe('old');
    expect(legacySessionToken('__Secure-authjs.session-token=old; __Host-authjs.session-token=new', true)).toBeNull();
    expect(legacySessionToken('__Secure-authjs.session-token=old', false)).toBeNull();
  });

  it('renames with the same token and expiry under __Host- (Secure, Path=/, no Domain) and clears the old name', () => {
    const [set, clear] = renamedSessionCookies('tok', new Date('2030-01-02T03:04:05Z'));
    expect(set).toBe('__Host-authjs.session-token=tok; Path=/; Expires=Wed, 02 Jan 2030 03:04:05 GMT; HttpOnly; SameSite=Lax; Secure');
    expect(clear).toMatch(/^__Secure-authjs\.session-token=; Path=\/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; .*Secure$/);
  });

  it('the gateway recognises all three names and nothing like them', () => {
    for (const c of ['authjs.session-token=a', 'x=1; __Secure-authjs.session-token=a', 'x=1;__Host-authjs.session-token=a']) expect(SESSION_COOKIE_RE.test(c)).toBe(true);
    for (const c of ['xauthjs.session-token=a', '__Other-authjs.session-token=a', 'authjs.session-token.0=a']) expect(SESSION_COOKIE_RE.test(c)).toBe(false);
  });
});
