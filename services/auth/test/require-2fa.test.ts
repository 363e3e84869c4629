import { spawnSync } from 'node:child_process';
import { ConfigError, loadConfig } from '@tasksvc/runtime';
import { generate } from 'otplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signedIn, startAuthSystem, type AuthTestSystem } from './helpers.ts';

const now = 1_900_000_020;
let t: AuthTestSystem;
beforeAll(async () => {
  t = await startAuthSystem({ REQUIRE_2FA: 'true' }, { auth: { clock: () => now } });
});
afterAll(async () => {
  await t?.stop();
});

/** Enrol TOTP in this session; returns the secret. */
async function enrolTotp(browser: Awaited<ReturnType<typeof signedIn>>['browser']): Promise<string> {
  const setup = await browser.json<{ secret: string }>(`${t.url}/api/auth/2fa/totp/setup`, { method: 'POST', body: '{}' });
  expect(setup.status).toBe(200);
  const enable = await browser.json(`${t.url}/api/auth/2fa/totp/enable`, { method: 'POST', body: JSON.stringify({ code: await generate({ secret: setup.body.secret, epoch: now }) }) });
  expect(enable.status).toBe(200);
  return setup.body.secret;
}

describe('REQUIRE_2FA=true: States and transitions', () => {
  it('user without second factor | login → restricted to /setup/2fa, all protected routes blocked', async () => {
    const { browser } = await signedIn(t, 'nofactor@example.test');
    const me = await browser.json<{ secondFactorOk: boolean }>(`${t.url}/api/auth/me`);
    expect(me.body.secondFactorOk).toBe(false);
    // Protected API routes: 403 SECOND_FACTOR_REQUIRED.
    for (const [method, path] of [['GET', '/api/user/api-keys'], ['GET', '/api/auth/sessions'], ['POST', '/api/user/api-keys']] as const) {
      const res = await browser.json<{ code: string }>(`${t.url}${path}`, { method, ...(method === 'POST' ? { body: JSON.stringify({ name: 'k' }) } : {}) });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body.code).toBe('SECOND_FACTOR_REQUIRED');
    }
    // Protected pages redirect to the forced setup page.
    for (const path of ['/dashboard', '/tasks', '/settings/security', '/admin', '/']) {
      const res = await browser.fetch(`${t.url}${path}`);
      expect(res.status, path).toBe(302);
      expect(res.headers.get('location'), path).toBe('/setup/2fa');
    }
    // The setup page and the enrolment routes stay reachable.
    expect((await browser.fetch(`${t.url}/setup/2fa`)).status).toBe(200);
    const status = await browser.json<{ required: boolean; secondFactorOk: boolean; pendingPage: string }>(`${t.url}/api/auth/2fa/status`);
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({ required: true, secondFactorOk: false, pendingPage: '/setup/2fa' });
  });

  it('restricted to setup page | registering a TOTP factor → normal access', async () => {
    const { browser } = await signedIn(t, 'enrols@example.test');
    expect((await browser.json(`${t.url}/api/user/api-keys`)).status).toBe(403);
    await enrolTotp(browser);
    expect((await browser.json(`${t.url}/api/user/api-keys`)).status).toBe(200);
    expect((await browser.json<{ secondFactorOk: boolean }>(`${t.url}/api/auth/me`)).body.secondFactorOk).toBe(true);
    const page = await browser.fetch(`${t.url}/dashboard`);
    expect(page.status).not.toBe(302);
  });

  it('user with exactly one second factor | removal → unchanged, HTTP 403 TOTP_REQUIRED_BY_ADMIN', async () => {
    const { browser, userId } = await signedIn(t, 'onefactor@example.test');
    await enrolTotp(browser);
    const res = await browser.json<{ code: string }>(`${t.url}/api/auth/2fa/totp`, { method: 'DELETE' });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('TOTP_REQUIRED_BY_ADMIN');
    const { rows } = await t.system.pool.query('SELECT enabled_at FROM auth.totp_credentials WHERE user_id = $1', [userId]);
    expect(rows[0].enabled_at).not.toBeNull();
    expect((await browser.json<{ totpEnabled: boolean }>(`${t.url}/api/auth/2fa/status`)).body.totpEnabled).toBe(true);
  });

  it('gates /setup/2fa itself behind sign-in', async () => {
    const res = await fetch(`${t.url}/setup/2fa`, { redirect: 'manual' });
    expect(res.status).toBe(401);
    expect(await res.text()).toContain('/login');
  });
});

describe('process start with REQUIRE_2FA=true and TOTP_ENCRYPTION_KEY unset', () => {
  it('loadConfig refuses, naming TOTP_ENCRYPTION_KEY', () => {
    const env = { DATABASE_URL: 'postgres://u:p@127.0.0.1:5432/db', AUTH_SECRET: 'x'.repeat(32), AUTH_TRUST_HOST: 'true', REQUIRE_2FA: 'true' };
    expect(() => loadConfig(env)).toThrow(ConfigError);
    try {
      loadConfig(env);
    } catch (err) {
      expect((err as ConfigError).problems.map((p) => p.variable)).toContain('TOTP_ENCRYPTION_KEY');
    }
    expect(() => loadConfig({ ...env, TOTP_ENCRYPTION_KEY: 'f'.repeat(64) })).not.toThrow();
  });

  it('the auth service process exits with status 1 before doing anything', () => {
    const node = new URL('../../../node_modules/.bin/node', import.meta.url).pathname;
    const main = new URL('../src/main.ts', import.meta.url).pathname;
    const r = spawnSync(node, [main], {
      env: { PATH: process.env.PATH, DATABASE_URL: 'postgres://u:p@127.0.0.1:1/db', AUTH_SECRET: 'x'.repeat(32), AUTH_TRUST_HOST: 'true', REQUIRE_2FA: 'true', NATS_URL: 'nats://127.0.0.1:1' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('refusing to start');
    expect(r.stderr).toContain('TOTP_ENCRYPTION_KEY');
  });
});

describe('REQUIRE_2FA=true after TOTP_ENCRYPTION_KEY was rotated (issue 54)', () => {
  it('a TOTP-only user is sent to /setup/2fa after the first factor and enrols again, which replaces the unreadable secret', async () => {
    const only = await signedIn(t, 'rotated-totp@example.test');
    const oldSecret = await enrolTotp(only.browser);

    await t.restart({ TOTP_ENCRYPTION_KEY: 'e'.repeat(64) });

    // first factor again: the unreadable TOTP is no factor, so the forced enrolment page, not the code prompt
    const { browser } = await signedIn(t, 'rotated-totp@example.test');
    expect((await browser.json<{ secondFactorOk: boolean }>(`${t.url}/api/auth/me`)).body.secondFactorOk).toBe(false);
    const page = await browser.fetch(`${t.url}/tasks`);
    expect(page.status).toBe(302);
    expect(page.headers.get('location')).toBe('/setup/2fa');
    expect((await browser.json(`${t.url}/api/auth/2fa/status`)).body).toMatchObject({ totpEnabled: false, secondFactorOk: false, pendingPage: '/setup/2fa' });
    // a code of the old authenticator entry proves nothing
    const old = await browser.json<{ code: string }>(`${t.url}/api/auth/2fa/verify`, { method: 'POST', body: JSON.stringify({ code: await generate({ secret: oldSecret, epoch: now }) }) });
    expect(old.status).toBe(409);
    // enrolling replaces the unreadable secret
    const newSecret = await enrolTotp(browser);
    expect(newSecret).not.toBe(oldSecret);
    expect((await browser.json(`${t.url}/api/user/api-keys`)).status).toBe(200);
    expect((await browser.fetch(`${t.url}/tasks`)).status).not.toBe(302);
  });
});
