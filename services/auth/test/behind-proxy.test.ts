import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSessionToken, sessionTokenHash } from '../src/domain/tokens.ts';
import { Browser, oidcSignIn, startAuthSystem, type AuthTestSystem } from './helpers.ts';

/** Public URL https (a TLS proxy in front, AUTH_TRUST_HOST=true); the test talks to the gateway as that proxy would. */
let t: AuthTestSystem;
beforeAll(async () => {
  t = await startAuthSystem({}, { tls: true });
});
afterAll(async () => {
  await t?.stop();
});

const HOST = '__Host-authjs.session-token';
const LEGACY = '__Secure-authjs.session-token';

/** A browser signed in through the OpenID provider, as a person is. */
async function signIn(hint: string): Promise<{ browser: Browser; token: string; setCookie: string; userId: string }> {
  const browser = new Browser({ tls: true });
  const { callback } = await oidcSignIn(browser, t.publicUrl, hint);
  expect(callback.status).toBe(302);
  const setCookie = callback.headers.getSetCookie().find((c) => c.startsWith(`${HOST}=`))!;
  const token = browser.cookie('localhost', HOST)!;
  const me = await browser.json<{ id: string }>(`${t.publicUrl}/api/auth/me`);
  expect(me.status).toBe(200);
  return { browser, token, setCookie, userId: me.body.id };
}

/** The same session as a browser of the release before #56.13 holds it: under the __Secure- name. */
function legacyBrowser(token: string): Browser {
  const b = new Browser({ tls: true });
  b.setCookie('localhost', LEGACY, token);
  return b;
}

const sessionCookies = (res: Response) => res.headers.getSetCookie().filter((c) => /^(__Host-|__Secure-)?authjs\.session-token=/.test(c));

describe('behind a TLS proxy', () => {
  it('a sign-in sets the __Host- session cookie (Secure, Path=/, no Domain); the same token under the plain name is refused (#56.13, #19.11)', async () => {
    const { browser, token, setCookie } = await signIn('host-cookie@example.test');
    expect(setCookie).toMatch(/^__Host-authjs\.session-token=[\w-]{43}; /);
    const attrs = setCookie.split(';').map((a) => a.trim().toLowerCase());
    expect(attrs).toEqual(expect.arrayContaining(['path=/', 'httponly', 'secure', 'samesite=lax']));
    expect(attrs.some((a) => a.startsWith('domain='))).toBe(false);
    expect(browser.cookie('localhost', LEGACY)).toBeUndefined();
    const plain = new Browser({ tls: true });
    plain.setCookie('localhost', 'authjs.session-token', token);
    expect((await plain.json(`${t.publicUrl}/api/auth/me`)).status).toBe(401);
  });

  it('a session under the old __Secure- name goes on, and its next request moves it to __Host- with its expiry and clears the old name', async () => {
    const { token, userId } = await signIn('legacy-cookie@example.test');
    const old = legacyBrowser(token);
    const res = await old.fetch(`${t.publicUrl}/api/auth/me`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { id: string }).id).toBe(userId);
    const [set, clear] = sessionCookies(res);
    const { rows } = await t.system.pool.query<{ expires: Date }>('SELECT expires FROM auth.sessions WHERE user_id = $1', [userId]);
    expect(set).toBe(`${HOST}=${token}; Path=/; Expires=${rows[0]!.expires.toUTCString()}; HttpOnly; SameSite=Lax; Secure`);
    expect(clear).toMatch(/^__Secure-authjs\.session-token=; Path=\/; Expires=Thu, 01 Jan 1970 00:00:00 GMT;.* Secure$/);
    expect(old.cookie('localhost', HOST)).toBe(token);
    expect(old.cookie('localhost', LEGACY)).toBeUndefined();
    // moved: the next request carries only the new name and renames nothing
    const next = await old.fetch(`${t.publicUrl}/api/auth/sessions`);
    expect(next.status).toBe(200);
    expect(sessionCookies(next)).toEqual([]);
    expect((await old.json<{ id: string }>(`${t.publicUrl}/api/auth/me`)).body.id).toBe(userId);
    // a stale old-name cookie beside the new one changes nothing: __Host- wins
    old.setCookie('localhost', LEGACY, 'planted-by-a-sibling-subdomain');
    const both = await old.fetch(`${t.publicUrl}/api/auth/me`);
    expect(both.status).toBe(200);
    expect(sessionCookies(both)).toEqual([]);
  });

  it("Auth.js's own routes read the old name too: its session answer moves the cookie, and signing out ends the session and clears both names", async () => {
    const { token, userId } = await signIn('legacy-authjs@example.test');
    const old = legacyBrowser(token);
    const session = await old.fetch(`${t.publicUrl}/api/auth/session`);
    expect(((await session.json()) as { user?: { email: string } } | null)?.user?.email).toBe('legacy-authjs@example.test');
    expect(old.cookie('localhost', HOST)).toBe(token);
    expect(old.cookie('localhost', LEGACY)).toBeUndefined();

    const leaving = legacyBrowser(token);
    const { body: csrf } = await leaving.json<{ csrfToken: string }>(`${t.publicUrl}/api/auth/csrf`);
    // the csrf answer already moved it; sign out with only the old name, as a page loaded before the move would
    leaving.jars.get('localhost')!.delete(HOST);
    leaving.setCookie('localhost', LEGACY, token);
    const out = await leaving.fetch(`${t.publicUrl}/api/auth/signout`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrfToken: csrf.csrfToken, callbackUrl: `${t.publicUrl}/` }).toString(),
    });
    expect(out.status).toBe(302);
    expect(leaving.cookie('localhost', HOST)).toBeUndefined();
    expect(leaving.cookie('localhost', LEGACY)).toBeUndefined();
    expect((await t.system.pool.query('SELECT 1 FROM auth.sessions WHERE user_id = $1', [userId])).rowCount).toBe(0);
    expect((await legacyBrowser(token).json(`${t.publicUrl}/api/auth/me`)).status).toBe(401);
  });

  it('an unknown or expired session under the old name is not renamed', async () => {
    const token = generateSessionToken();
    const { rows } = await t.system.pool.query<{ id: string }>(`INSERT INTO auth.users (email) VALUES ('expired-legacy@example.test') RETURNING id`);
    await t.system.pool.query(`INSERT INTO auth.sessions (token_hash, user_id, expires) VALUES ($1, $2, now() - interval '1 minute')`, [sessionTokenHash(t.config.AUTH_SECRET, token), rows[0]!.id]);
    for (const value of [token, generateSessionToken()]) {
      const res = await legacyBrowser(value).fetch(`${t.publicUrl}/api/auth/me`);
      expect(res.status).toBe(401);
      expect(sessionCookies(res)).toEqual([]);
    }
  });

  it('takes the client address from the trusted proxy hops, not from what the client wrote into X-Forwarded-For', async () => {
    // The client claims 203.0.113.9; the one proxy in front (the default with AUTH_TRUST_HOST) saw 198.51.100.7.
    const clientKeyOf = async (xff: string) => {
      const res = await new Browser().json<{ challengeId: string }>(`${t.url}/api/auth/passkey/login/options`, { method: 'POST', headers: { 'x-forwarded-for': xff } });
      expect(res.status).toBe(200);
      const { rows } = await t.system.pool.query<{ client_key: string }>('SELECT client_key FROM auth.webauthn_challenges WHERE id = $1', [res.body.challengeId]);
      return rows[0]!.client_key;
    };
    expect(await clientKeyOf('203.0.113.9, 198.51.100.7')).toBe('198.51.100.7');
    await t.restart({ TRUST_PROXY_HOPS: 2 });
    expect(await clientKeyOf('203.0.113.9, 198.51.100.7, 192.0.2.1')).toBe('198.51.100.7');
    await t.restart({ TRUST_PROXY_HOPS: 0 });
    // No proxy believed: the connection's own (loopback) address.
    expect(['127.0.0.1', '0:0:0:0::/64']).toContain(await clientKeyOf('203.0.113.9'));
  });
});
