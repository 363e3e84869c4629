import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, oidcSignIn, startAuthSystem, type AuthTestSystem } from './helpers.ts';

let t: AuthTestSystem;
beforeAll(async () => {
  t = await startAuthSystem();
});
afterAll(async () => {
  await t?.stop();
});

describe('OIDC sign-in through the gateway against a real oidc-provider', () => {
  it('completes authorization code + PKCE and creates a database session', async () => {
    const browser = new Browser();
    const { body: csrf } = await browser.json<{ csrfToken: string }>(`${t.url}/api/auth/csrf`);
    const signin = await browser.fetch(`${t.url}/api/auth/signin/oidc?login_hint=alice%40example.test`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrfToken: csrf.csrfToken, callbackUrl: `${t.url}/dashboard` }).toString(),
    });
    expect(signin.status).toBe(302);
    // Several Set-Cookie headers (PKCE verifier, state, nonce, callback URL) crossed the bus intact.
    const setCookies = signin.headers.getSetCookie().map((c) => c.split('=')[0]);
    expect(setCookies).toEqual(expect.arrayContaining(['authjs.pkce.code_verifier', 'authjs.state', 'authjs.nonce']));
    const auth = new URL(signin.headers.get('location')!);
    expect(`${auth.origin}${auth.pathname}`).toBe(`${t.op.issuer}/auth`);
    expect(auth.searchParams.get('redirect_uri')).toBe(`${t.url}/api/auth/callback/oidc`);
    expect(auth.searchParams.get('code_challenge_method')).toBe('S256');
    expect(auth.searchParams.get('code_challenge')).toMatch(/^[\w-]{43}$/);
    expect(auth.searchParams.get('state')).toBeTruthy();
    expect(auth.searchParams.get('scope')).toBe('openid email profile');

    const { res, url } = await browser.follow(await browser.fetch(auth), auth, (u) => u.pathname === '/api/auth/callback/oidc');
    expect(res.status).toBeGreaterThanOrEqual(300);
    expect(url.searchParams.get('code')).toBeTruthy();
    const callback = await browser.fetch(url);
    expect(callback.status).toBe(302);
    expect(callback.headers.get('location')).toBe(`${t.url}/dashboard`);
    const token = browser.cookie('localhost', 'authjs.session-token');
    expect(token).toMatch(/^[\w-]{43}$/);
    // plain http on a loopback name (development, tests): no prefix and no Secure, which it could not keep (#56.13)
    const sessionCookie = callback.headers.getSetCookie().find((c) => /^(__Host-|__Secure-)?authjs\.session-token=/.test(c));
    expect(sessionCookie).toMatch(/^authjs\.session-token=[\w-]{43}; Path=\/; /);
    expect(sessionCookie).not.toMatch(/secure/i);

    const session = await browser.json<{ user: { email: string } }>(`${t.url}/api/auth/session`);
    expect(session.body.user.email).toBe('alice@example.test');
    const me = await browser.json<{ id: string; email: string; method: string; secondFactorOk: boolean }>(`${t.url}/api/auth/me`);
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ email: 'alice@example.test', method: 'session', secondFactorOk: true });

    // Stored: the user with a UUID, the linked account, a session row keyed by an HMAC, never the token.
    const { rows } = await t.system.pool.query('SELECT s.token_hash, a.provider, a.provider_account_id FROM auth.sessions s JOIN auth.accounts a USING (user_id) WHERE s.user_id = $1', [me.body.id]);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ provider: 'oidc', provider_account_id: 'alice@example.test' });
    expect(rows[0].token_hash).not.toContain(token);
  });

  it("stores none of the provider's tokens, and the database refuses them", async () => {
    const { userId } = await signInAs('tokens@example.test');
    const { rows } = await t.system.pool.query('SELECT access_token, refresh_token, id_token, session_state FROM auth.accounts WHERE user_id = $1', [userId]);
    expect(rows).toEqual([{ access_token: null, refresh_token: null, id_token: null, session_state: null }]);
    await expect(
      t.system.pool.query(`INSERT INTO auth.accounts (user_id, type, provider, provider_account_id, access_token) VALUES ($1, 'oidc', 'oidc', 'x', 'secret')`, [userId]),
    ).rejects.toThrow(/accounts_no_provider_tokens/);
  });

  it('after sign-in follows only a normalised path on this site (callbackUrl)', async () => {
    const landing = async (callbackUrl: string) => {
      const { callback } = await oidcSignIn(new Browser(), t.url, 'redirect@example.test', callbackUrl);
      expect(callback.status).toBe(302);
      return callback.headers.get('location');
    };
    for (const evil of ['/\\evil.example', '//evil.example', '/%2F%2Fevil.example', 'https://evil.example/', '/\t/evil.example']) {
      expect(await landing(evil)).toBe(`${t.url}/dashboard`);
    }
    expect(await landing('/tasks?topic=a#b')).toBe(`${t.url}/tasks?topic=a#b`);
  });

  it('rejects a tampered session cookie', async () => {
    const { browser } = await signInAs('tamper@example.test');
    const token = browser.cookie('localhost', 'authjs.session-token')!;
    expect((await browser.json(`${t.url}/api/auth/me`)).status).toBe(200);
    const flipped = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A');
    const forged = new Browser();
    forged.setCookie('localhost', 'authjs.session-token', flipped);
    const res = await forged.json<{ code: string }>(`${t.url}/api/auth/me`);
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('UNAUTHENTICATED');
    expect((await forged.json<{ user?: unknown } | null>(`${t.url}/api/auth/session`)).body).toBeNull();
  });

  it('a new sign-in purges expired sessions, of every user; live ones stay (#56.13)', async () => {
    const { userId } = await signInAs('purge@example.test');
    const stale = await t.system.pool.query<{ id: string }>(
      `INSERT INTO auth.sessions (token_hash, user_id, expires) VALUES ($1, $2, now() - interval '1 minute'), ($3, $2, now() + interval '1 day') RETURNING id`,
      [`stale-${userId}`, userId, `live-${userId}`],
    );
    await signInAs('someone-else@example.test');
    const left = await t.system.pool.query<{ id: string }>('SELECT id FROM auth.sessions WHERE id = ANY($1::uuid[])', [stale.rows.map((r) => r.id)]);
    expect(left.rows.map((r) => r.id)).toEqual([stale.rows[1]!.id]);
    expect((await t.system.pool.query('SELECT 1 FROM auth.sessions WHERE expires < now()')).rowCount).toBe(0);
  });

  it('the purge and the live-session reads have an index on expires (migration 0007)', async () => {
    const { rows } = await t.system.pool.query<{ indexdef: string }>(`SELECT indexdef FROM pg_indexes WHERE schemaname = 'auth' AND tablename = 'sessions' AND indexname = 'sessions_expires'`);
    expect(rows.map((r) => r.indexdef)).toEqual([expect.stringMatching(/USING btree \(expires\)$/)]);
    // it serves the purge's predicate (the table is small here, so the planner is kept from a plain scan)
    const client = await t.system.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SET LOCAL enable_seqscan = off');
      const plan = await client.query<{ 'QUERY PLAN': string }>('EXPLAIN DELETE FROM auth.sessions WHERE expires < now()');
      expect(plan.rows.map((r) => r['QUERY PLAN']).join('\n')).toContain('sessions_expires');
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });

  it('signs out: the session row is gone and the cookie no longer works', async () => {
    const { browser } = await signInAs('logout@example.test');
    const token = browser.cookie('localhost', 'authjs.session-token')!;
    const { body: csrf } = await browser.json<{ csrfToken: string }>(`${t.url}/api/auth/csrf`);
    const out = await browser.fetch(`${t.url}/api/auth/signout`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrfToken: csrf.csrfToken, callbackUrl: `${t.url}/` }).toString(),
    });
    expect(out.status).toBe(302);
    expect(browser.cookie('localhost', 'authjs.session-token')).toBeUndefined();
    const replay = new Browser();
    replay.setCookie('localhost', 'authjs.session-token', token);
    expect((await replay.json(`${t.url}/api/auth/me`)).status).toBe(401);
  });

  it('does not link a second account with the same email silently; links it when the user is signed in', async () => {
    const first = await signInAs('carol-1|carol@example.test');
    // Another identity at the provider that happens to carry the same address: refused, not merged.
    const stranger = new Browser();
    const { callback } = await oidcSignIn(stranger, t.url, 'carol-2|carol@example.test');
    expect(callback.status).toBe(302);
    expect(callback.headers.get('location')).toContain('error=OAuthAccountNotLinked');
    expect(stranger.cookie('localhost', 'authjs.session-token')).toBeUndefined();
    // The signed-in user links it explicitly: same user, two accounts.
    const { callback: linked } = await oidcSignIn(first.browser, t.url, 'carol-2|carol@example.test');
    expect(linked.status).toBe(302);
    expect(linked.headers.get('location')).not.toContain('error=');
    const { rows } = await t.system.pool.query('SELECT provider_account_id FROM auth.accounts WHERE user_id = $1 ORDER BY provider_account_id', [first.userId]);
    expect(rows.map((r) => r.provider_account_id)).toEqual(['carol-1', 'carol-2']);
    // Now the second identity signs in to the same user.
    const again = await signInAs('carol-2|carol@example.test');
    expect(again.userId).toBe(first.userId);
  });

  it('lists the configured provider with its callback URL', async () => {
    const res = await new Browser().json<Record<string, { id: string; callbackUrl: string; type: string }>>(`${t.url}/api/auth/providers`);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual(['oidc']);
    expect(res.body.oidc).toMatchObject({ id: 'oidc', type: 'oidc', callbackUrl: `${t.url}/api/auth/callback/oidc` });
  });

  it('signs everyone out when AUTH_SECRET changes', async () => {
    const { browser } = await signInAs('rotate@example.test');
    expect((await browser.json(`${t.url}/api/auth/me`)).status).toBe(200);
    await t.restart({ AUTH_SECRET: 'a-completely-different-secret-0123456789' });
    const res = await browser.json<{ code: string }>(`${t.url}/api/auth/me`);
    expect(res.status).toBe(401);
    expect((await browser.json(`${t.url}/api/auth/session`)).body).toBeNull();
    // Signing in again works under the new secret.
    const fresh = await signInAs('rotate@example.test');
    expect((await fresh.browser.json(`${t.url}/api/auth/me`)).status).toBe(200);
  });
});

async function signInAs(hint: string): Promise<{ browser: Browser; userId: string }> {
  const browser = new Browser();
  const { callback } = await oidcSignIn(browser, t.url, hint);
  expect(callback.status).toBe(302);
  const me = await browser.json<{ id: string }>(`${t.url}/api/auth/me`);
  expect(me.status).toBe(200);
  return { browser, userId: me.body.id };
}
