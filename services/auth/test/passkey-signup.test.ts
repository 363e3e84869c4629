import type { Browser as Chromium, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureUiBuilt, hasChromium, launchChromium } from '../../../ui/test/support.ts';
import { Browser, startAuthSystem, type AuthTestSystem } from './helpers.ts';

/**
 * Passkey-only accounts (SIGNUP_WITH_PASSKEY, #15.6): no identity provider is configured; a person
 * creates an account on the real login page with Chromium's virtual authenticator and is signed in.
 */

const INVITE = 'invite-code-0123456789';
let t: AuthTestSystem;
let chromium: Chromium;
let context: BrowserContext;
let page: Page;

async function me(): Promise<{ status: number; body: { id?: string; name?: string | null; email?: string; secondFactorOk?: boolean; method?: string } }> {
  const res = await page.request.get(`${t.url}/api/auth/me`);
  return { status: res.status(), body: (await res.json()) as never };
}

beforeAll(async () => {
  if (!hasChromium) return;
  await ensureUiBuilt();
  // No identity provider at all: only passkeys can make an account.
  t = await startAuthSystem({ OIDC_ISSUER: undefined, OIDC_CLIENT_ID: undefined, OIDC_CLIENT_SECRET: undefined, SIGNUP_WITH_PASSKEY: 'true', SIGNUP_INVITE_CODE: INVITE });
  chromium = await launchChromium();
  context = await chromium.newContext({ baseURL: t.url });
  page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
});
afterAll(async () => {
  await chromium?.close();
  await t?.stop();
});

describe.skipIf(!hasChromium)('passkey-only accounts (SIGNUP_WITH_PASSKEY=true, no provider configured)', () => {
  let userId = '';

  it('refuses a wrong invitation code, naming the field, and creates nothing', async () => {
    const res = await new Browser().json<{ code: string; issues: { path: string }[] }>(`${t.url}/api/auth/passkey/signup/options`, {
      method: 'POST',
      body: JSON.stringify({ name: 'Mallory', inviteCode: 'guess' }),
    });
    expect(res.status).toBe(403);
    expect(res.body.issues[0]!.path).toBe('body.inviteCode');
    const missingName = await new Browser().json<{ issues: { path: string }[] }>(`${t.url}/api/auth/passkey/signup/options`, { method: 'POST', body: JSON.stringify({ inviteCode: INVITE }) });
    expect(missingName.status).toBe(400);
    expect(missingName.body.issues[0]!.path).toBe('body.name');
    const { rows } = await t.system.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM auth.users');
    expect(rows[0]!.n).toBe(0);
  });

  it('creates an account on the login page with the virtual authenticator and lands signed in', async () => {
    await page.goto('/login');
    const create = page.locator('button[data-action="passkey-signup"]');
    await create.waitFor();
    expect(await page.getByText('No sign-in provider is configured').count()).toBe(0);
    await page.getByLabel('Your name').fill('Pat Passkey');
    await page.getByLabel('Invitation code').fill(INVITE);
    await create.click();
    await page.waitForURL(`${t.url}/dashboard`);

    const who = await me();
    expect(who.status).toBe(200);
    expect(who.body).toMatchObject({ name: 'Pat Passkey', email: '', method: 'session', secondFactorOk: true });
    userId = who.body.id!;
    // No password, no provider account: the user, one discoverable passkey, one session.
    const { rows } = await t.system.pool.query(
      `SELECT (SELECT count(*)::int FROM auth.accounts WHERE user_id = $1) AS accounts,
              (SELECT count(*)::int FROM auth.authenticators WHERE user_id = $1) AS passkeys,
              (SELECT count(*)::int FROM auth.sessions WHERE user_id = $1) AS sessions`,
      [userId],
    );
    expect(rows[0]).toEqual({ accounts: 0, passkeys: 1, sessions: 1 });
  });

  it('signs in again with that passkey alone', async () => {
    await context.clearCookies();
    expect((await me()).status).toBe(401);
    await page.goto('/login');
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await page.waitForURL(`${t.url}/dashboard`);
    expect((await me()).body).toMatchObject({ id: userId, secondFactorOk: true });
  });

  it('the login page sends a signed-in person only to a path on this site (callbackUrl)', async () => {
    for (const evil of ['/\\evil.example', '//evil.example', '/%2F%2Fevil.example', 'javascript:alert(1)']) {
      await page.goto(`/login?callbackUrl=${encodeURIComponent(evil)}`);
      const link = page.getByRole('link', { name: 'Continue' });
      await link.waitFor();
      // The href as the browser resolves it (a backslash is a slash to it).
      const target = await link.evaluate((a) => (a as HTMLAnchorElement).href);
      expect(target, evil).toBe(`${t.url}/dashboard`);
    }
  });

  it('is off unless switched on: 404 and no form', async () => {
    await t.restart({ SIGNUP_WITH_PASSKEY: false, SIGNUP_INVITE_CODE: undefined });
    const res = await new Browser().json<{ code: string }>(`${t.url}/api/auth/passkey/signup/options`, { method: 'POST', body: JSON.stringify({ name: 'Late' }) });
    expect(res.status).toBe(404);
    await context.clearCookies();
    await page.goto('/login');
    await page.getByText('No sign-in provider is configured').waitFor();
    expect(await page.locator('button[data-action="passkey-signup"]').count()).toBe(0);
  });
});
