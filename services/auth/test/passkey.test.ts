import { existsSync } from 'node:fs';
import { chromium, type Browser as Chromium, type BrowserContext, type Page } from 'playwright-core';
import { generate } from 'otplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signedIn, startAuthSystem, type AuthTestSystem } from './helpers.ts';

const CHROMIUM = '/usr/bin/chromium';
const BUNDLE = new URL('../../../node_modules/@simplewebauthn/browser/dist/bundle/index.umd.min.js', import.meta.url).pathname;
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) console.warn(`SKIPPING passkey tests: ${CHROMIUM} is missing (apt-get install -y chromium)`);

const now = 1_900_000_020;
// JSON replies read inside the page; the assertions check their shape.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Reply = { status: number; body: any };
let t: AuthTestSystem;
let browser: Chromium;
let context: BrowserContext;
let page: Page;

/** Call an auth route from inside the page (same origin, the page's cookies), returning status and JSON. */
async function call(path: string, body?: unknown, method = body === undefined ? 'GET' : 'POST'): Promise<Reply> {
  return page.evaluate(
    async ({ path, body, method }) => {
      const res = await fetch(path, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null };
    },
    { path, body, method },
  );
}

/** Run options → authenticator → verify in the page with @simplewebauthn/browser. */
async function ceremony(kind: 'register' | 'login' | '2fa', extra: Record<string, unknown> = {}): Promise<Reply> {
  return page.evaluate(
    async ({ kind, extra }) => {
      const W = (globalThis as unknown as { SimpleWebAuthnBrowser: { startRegistration: (o: unknown) => Promise<unknown>; startAuthentication: (o: unknown) => Promise<unknown> } }).SimpleWebAuthnBrowser;
      const post = async (path: string, body: unknown) => {
        const res = await fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
        const text = await res.text();
        return { status: res.status, body: text ? JSON.parse(text) : null };
      };
      const base = kind === 'register' ? '/api/auth/passkey/register' : kind === 'login' ? '/api/auth/passkey/login' : '/api/auth/passkey/2fa';
      const opts = await post(`${base}/options`, {});
      if (opts.status !== 200) return opts;
      const response = kind === 'register' ? await W.startRegistration({ optionsJSON: opts.body.options }) : await W.startAuthentication({ optionsJSON: opts.body.options });
      return post(`${base}/verify`, { challengeId: opts.body.challengeId, response, ...extra });
    },
    { kind, extra },
  );
}

async function useSession(token: string): Promise<void> {
  await context.clearCookies();
  await context.addCookies([{ name: 'authjs.session-token', value: token, domain: 'localhost', path: '/', httpOnly: true, sameSite: 'Lax' }]);
}

describe.skipIf(!haveChromium)('passkeys in Chromium with a CDP virtual authenticator (REQUIRE_2FA=true)', () => {
  let userId = '';
  let passkeyId = '';

  beforeAll(async () => {
    t = await startAuthSystem({ REQUIRE_2FA: 'true' }, { auth: { clock: () => now } });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    // The test injects the WebAuthn browser library into a served page, which the app's CSP rightly
    // forbids; the CSP itself is checked in ui/test/csp.test.ts.
    context = await browser.newContext({ bypassCSP: true });
    page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
    });
    // A same-origin page to run the ceremonies in (the real screens are the UI's).
    await page.goto(`${t.url}/impressum`);
    await page.addScriptTag({ path: BUNDLE });
  });
  afterAll(async () => {
    await browser?.close();
    await t?.stop();
  });

  it('registers a passkey as the first factor, which lifts the REQUIRE_2FA restriction', async () => {
    const s = await signedIn(t, 'passkey-user@example.test');
    userId = s.userId;
    await useSession(s.browser.cookie('localhost', 'authjs.session-token')!);
    expect((await call('/api/user/api-keys')).status).toBe(403);

    const reg = await ceremony('register', { name: 'Laptop' });
    expect(reg.status).toBe(201);
    expect(reg.body).toMatchObject({ name: 'Laptop', lastUsedAt: null });
    passkeyId = reg.body.id;

    expect((await call('/api/user/api-keys')).status).toBe(200);
    const list = await call('/api/auth/passkey');
    expect(list.body.passkeys.map((p: { id: string }) => p.id)).toEqual([passkeyId]);
    const { rows } = await t.system.pool.query('SELECT user_id, counter FROM auth.authenticators WHERE id = $1', [passkeyId]);
    expect(rows[0].user_id).toBe(userId);
  });

  it('signs in without a password (discoverable credential) and the session counts as verified', async () => {
    await context.clearCookies();
    expect((await call('/api/auth/me')).status).toBe(401);
    const login = await ceremony('login');
    expect(login.status).toBe(200);
    expect(login.body.userId).toBe(userId);
    const cookies = await context.cookies(t.url);
    expect(cookies.find((c) => c.name === 'authjs.session-token')?.httpOnly).toBe(true);
    const me = await call('/api/auth/me');
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ id: userId, secondFactorOk: true, method: 'session' });
    const { rows } = await t.system.pool.query('SELECT counter, last_used_at FROM auth.authenticators WHERE id = $1', [passkeyId]);
    expect(Number(rows[0].counter)).toBeGreaterThan(0);
    expect(rows[0].last_used_at).not.toBeNull();
  });

  it('proves the second factor of a provider sign-in', async () => {
    const s = await signedIn(t, 'passkey-user@example.test');
    expect(s.userId).toBe(userId);
    await useSession(s.browser.cookie('localhost', 'authjs.session-token')!);
    expect((await call('/api/auth/me')).body.secondFactorOk).toBe(false);
    expect((await call('/api/user/api-keys')).status).toBe(403);
    const res = await ceremony('2fa');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ method: 'passkey' });
    expect((await call('/api/auth/me')).body.secondFactorOk).toBe(true);
    expect((await call('/api/user/api-keys')).status).toBe(200);
  });

  it('refuses to remove the last factor (403 TOTP_REQUIRED_BY_ADMIN); with TOTP added, removing the passkey is allowed', async () => {
    const refused = await call(`/api/auth/passkey/${passkeyId}`, undefined, 'DELETE');
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('TOTP_REQUIRED_BY_ADMIN');
    expect((await call('/api/auth/passkey')).body.passkeys).toHaveLength(1);

    const setup = await call('/api/auth/2fa/totp/setup', {});
    expect(setup.status).toBe(200);
    const enable = await call('/api/auth/2fa/totp/enable', { code: await generate({ secret: setup.body.secret, epoch: now }) });
    expect(enable.status).toBe(200);
    expect((await call(`/api/auth/passkey/${passkeyId}`, undefined, 'DELETE')).status).toBe(204);
    // TOTP is now the only factor: it cannot go either.
    expect((await call('/api/auth/2fa/totp', undefined, 'DELETE')).status).toBe(403);
  });

  it('a challenge is single-use and bad input names the field', async () => {
    const bad = await call('/api/auth/passkey/login/verify', { challengeId: 'not-a-uuid', response: {} });
    expect(bad.status).toBe(400);
    expect(bad.body.issues.map((i: { path: string }) => i.path)).toContain('body.challengeId');
    const unknown = await call('/api/auth/passkey/login/verify', {
      challengeId: '00000000-0000-4000-8000-000000000000',
      response: { id: 'x', rawId: 'x', type: 'public-key', response: { clientDataJSON: 'e30' }, clientExtensionResults: {} },
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.issues[0].path).toBe('body.challengeId');
  });

  it("anonymous sign-in options cannot grow the challenge table, nor cancel someone else's pending sign-in from the same address (#56.5)", async () => {
    const anonymousRows = async () => (await t.system.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM auth.webauthn_challenges WHERE user_id IS NULL')).rows[0]!.n;
    const options = () => fetch(`${t.url}/api/auth/passkey/login/options`, { method: 'POST' });
    const before = await anonymousRows();
    // someone behind the same address (an office, a proxy) has started a passkey sign-in
    const pending = await options();
    expect(pending.status).toBe(200);
    const { challengeId } = (await pending.json()) as { challengeId: string };
    const statuses: number[] = [];
    // 1,000 calls, 20 at a time: concurrent, and the bound must hold exactly while they race.
    for (let batch = 0; batch < 50; batch++) {
      const replies = await Promise.all(Array.from({ length: 20 }, options));
      for (const r of replies) {
        statuses.push(r.status);
        if (r.status === 429) {
          expect(((await r.json()) as { code: string }).code).toBe('RATE_LIMITED');
          // when a slot frees: at most a challenge's lifetime (300 s)
          expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
          expect(Number(r.headers.get('retry-after'))).toBeLessThanOrEqual(300);
        } else await r.body?.cancel();
      }
    }
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(1_000 - 10);
    expect(await anonymousRows()).toBeLessThanOrEqual(Math.max(before + 1, 10));
    // the flood was refused; the pending sign-in is still there to be finished
    expect((await t.system.pool.query('SELECT 1 FROM auth.webauthn_challenges WHERE id = $1', [challengeId])).rowCount).toBe(1);

    // Retry-After is the limiter's own figure: the seconds until this address's oldest pending challenge
    // expires and frees a slot (made 42 s here), between its value just before and just after the call
    await t.system.pool.query(
      `UPDATE auth.webauthn_challenges SET expires_at = now() + interval '42 seconds'
        WHERE id = (SELECT id FROM auth.webauthn_challenges WHERE client_key = (SELECT client_key FROM auth.webauthn_challenges WHERE id = $1) ORDER BY expires_at LIMIT 1)`,
      [challengeId],
    );
    const waitNow = async () =>
      (
        await t.system.pool.query<{ s: number }>(
          'SELECT ceil(extract(epoch from min(expires_at) - now()))::int AS s FROM auth.webauthn_challenges WHERE client_key = (SELECT client_key FROM auth.webauthn_challenges WHERE id = $1)',
          [challengeId],
        )
      ).rows[0]!.s;
    const atMost = await waitNow();
    const refused = await options();
    const atLeast = await waitNow();
    expect(refused.status).toBe(429);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(atMost).toBeLessThanOrEqual(42);
    expect(retryAfter).toBeLessThanOrEqual(atMost);
    expect(retryAfter).toBeGreaterThanOrEqual(Math.max(1, atLeast));
    expect(((await refused.json()) as { message: string }).message).toContain(`try again in ${retryAfter} s`);
  });
});
