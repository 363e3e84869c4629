import { decryptSecret } from '@tasksvc/runtime';
import { generate } from 'otplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signedIn, startAuthSystem, type AuthTestSystem } from './helpers.ts';

/** The auth service's TOTP clock (seconds): fixed, moved by the tests, so nothing waits for a 30-s step. */
let now = 1_900_000_020;
const KEY = 'b'.repeat(64);
let t: AuthTestSystem;

beforeAll(async () => {
  t = await startAuthSystem({ TOTP_ENCRYPTION_KEY: KEY }, { auth: { clock: () => now } });
});
afterAll(async () => {
  await t?.stop();
});

const codeAt = (secret: string, epoch: number) => generate({ secret, epoch });

describe('TOTP', () => {
  let secret = '';
  let backupCodes: string[] = [];
  const user = 'totp-user@example.test';

  it('enrols: the secret is stored AES-256-GCM encrypted and becomes active only after a valid code', async () => {
    const { browser, userId } = await signedIn(t, user);
    const setup = await browser.json<{ secret: string; otpauthUri: string }>(`${t.url}/api/auth/2fa/totp/setup`, { method: 'POST', body: '{}' });
    expect(setup.status).toBe(200);
    secret = setup.body.secret;
    expect(secret).toMatch(/^[A-Z2-7]{16,}$/);
    expect(setup.body.otpauthUri).toMatch(/^otpauth:\/\/totp\//);
    expect(setup.body.otpauthUri).toContain(`secret=${secret}`);

    const { rows } = await t.system.pool.query<{ secret_encrypted: string; enabled_at: Date | null }>('SELECT secret_encrypted, enabled_at FROM auth.totp_credentials WHERE user_id = $1', [userId]);
    expect(rows[0]!.enabled_at).toBeNull();
    expect(rows[0]!.secret_encrypted).not.toContain(secret);
    expect(rows[0]!.secret_encrypted.split(':')).toHaveLength(3);
    expect(decryptSecret(KEY, rows[0]!.secret_encrypted)).toBe(secret);
    expect(() => decryptSecret('c'.repeat(64), rows[0]!.secret_encrypted)).toThrow();

    const wrong = await browser.json<{ code: string; issues: { path: string }[] }>(`${t.url}/api/auth/2fa/totp/enable`, { method: 'POST', body: JSON.stringify({ code: '000000' === (await codeAt(secret, now)) ? '111111' : '000000' }) });
    expect(wrong.status).toBe(400);
    expect(wrong.body.issues[0]!.path).toBe('body.code');
    const missing = await browser.json<{ issues: { path: string }[] }>(`${t.url}/api/auth/2fa/totp/enable`, { method: 'POST', body: '{}' });
    expect(missing.status).toBe(400);
    expect(missing.body.issues[0]!.path).toBe('body.code');

    const ok = await browser.json<{ backupCodes: string[] }>(`${t.url}/api/auth/2fa/totp/enable`, { method: 'POST', body: JSON.stringify({ code: await codeAt(secret, now) }) });
    expect(ok.status).toBe(200);
    backupCodes = ok.body.backupCodes;
    expect(backupCodes).toHaveLength(10);
    expect(new Set(backupCodes).size).toBe(10);
    for (const c of backupCodes) expect(c).toMatch(/^[A-Z2-9]{5}-[A-Z2-9]{5}$/);
    const stored = await t.system.pool.query<{ code_hash: string }>('SELECT code_hash FROM auth.totp_backup_codes WHERE user_id = $1', [userId]);
    expect(stored.rows).toHaveLength(10);
    for (const r of stored.rows) expect(backupCodes.join()).not.toContain(r.code_hash);

    const status = await browser.json<{ totpEnabled: boolean; sessionVerified: boolean; backupCodesRemaining: number }>(`${t.url}/api/auth/2fa/status`);
    expect(status.body).toMatchObject({ totpEnabled: true, sessionVerified: true, backupCodesRemaining: 10 });
  });

  it('a new sign-in must prove the factor; ±1 step accepted, a used code is refused (replay)', async () => {
    const { browser } = await signedIn(t, user);
    const me = await browser.json<{ secondFactorOk: boolean }>(`${t.url}/api/auth/me`);
    expect(me.body.secondFactorOk).toBe(false);
    const blocked = await browser.json<{ code: string }>(`${t.url}/api/user/api-keys`);
    expect(blocked.status).toBe(403);
    expect(blocked.body.code).toBe('SECOND_FACTOR_REQUIRED');
    const page = await browser.fetch(`${t.url}/dashboard`);
    expect(page.status).toBe(302);
    expect(page.headers.get('location')).toBe('/login/2fa');

    // The code that enabled TOTP was for this step: replaying it is refused.
    const replay = await browser.json<{ code: string }>(`${t.url}/api/auth/2fa/verify`, { method: 'POST', body: JSON.stringify({ code: await codeAt(secret, now) }) });
    expect(replay.status).toBe(400);
    // The next step's code (clock drift +30 s) is accepted...
    const next = await browser.json<{ method: string }>(`${t.url}/api/auth/2fa/verify`, { method: 'POST', body: JSON.stringify({ code: await codeAt(secret, now + 30) }) });
    expect(next.status).toBe(200);
    expect(next.body.method).toBe('totp');
    expect((await browser.json(`${t.url}/api/user/api-keys`)).status).toBe(200);
    // ...once.
    const again = await signedIn(t, user);
    const replay2 = await again.browser.json(`${t.url}/api/auth/2fa/verify`, { method: 'POST', body: JSON.stringify({ code: await codeAt(secret, now + 30) }) });
    expect(replay2.status).toBe(400);
  });

  it('accepts the previous step, refuses a code three steps old', async () => {
    now += 300;
    const { browser } = await signedIn(t, user);
    const old = await browser.json(`${t.url}/api/auth/2fa/verify`, { method: 'POST', body: JSON.stringify({ code: await codeAt(secret, now - 90) }) });
    expect(old.status).toBe(400);
    const prev = await browser.json<{ method: string }>(`${t.url}/api/auth/2fa/verify`, { method: 'POST', body: JSON.stringify({ code: await codeAt(secret, now - 30) }) });
    expect(prev.status).toBe(200);
    expect(prev.body.method).toBe('totp');
  });

  it('a backup code works once, in any case and with or without the dash', async () => {
    const first = await signedIn(t, user);
    const code = backupCodes[0]!;
    const used = await first.browser.json<{ method: string; backupCodesRemaining: number }>(`${t.url}/api/auth/2fa/verify`, {
      method: 'POST',
      body: JSON.stringify({ code: code.replace('-', '').toLowerCase() }),
    });
    expect(used.status).toBe(200);
    expect(used.body).toEqual({ method: 'backup_code', backupCodesRemaining: 9 });
    expect((await first.browser.json(`${t.url}/api/user/api-keys`)).status).toBe(200);

    const second = await signedIn(t, user);
    const reused = await second.browser.json<{ code: string }>(`${t.url}/api/auth/2fa/verify`, { method: 'POST', body: JSON.stringify({ code }) });
    expect(reused.status).toBe(400);
    expect((await second.browser.json(`${t.url}/api/user/api-keys`)).status).toBe(403);
  });

  it('an unverified session cannot enrol a new factor over the existing one', async () => {
    const { browser } = await signedIn(t, user);
    const res = await browser.json<{ code: string }>(`${t.url}/api/auth/passkey/register/options`, { method: 'POST', body: '{}' });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('SECOND_FACTOR_REQUIRED');
  });

  it('removing TOTP (REQUIRE_2FA=false) drops the secret and the backup codes', async () => {
    const { browser, userId } = await signedIn(t, user);
    await browser.json(`${t.url}/api/auth/2fa/verify`, { method: 'POST', body: JSON.stringify({ code: backupCodes[1] }) });
    const del = await browser.fetch(`${t.url}/api/auth/2fa/totp`, { method: 'DELETE' });
    expect(del.status).toBe(204);
    const { rows } = await t.system.pool.query('SELECT (SELECT count(*)::int FROM auth.totp_credentials WHERE user_id = $1) AS t, (SELECT count(*)::int FROM auth.totp_backup_codes WHERE user_id = $1) AS b', [userId]);
    expect(rows[0]).toEqual({ t: 0, b: 0 });
    const fresh = await signedIn(t, user);
    expect((await fresh.browser.json<{ secondFactorOk: boolean }>(`${t.url}/api/auth/me`)).body.secondFactorOk).toBe(true);
  });

  it('refuses further codes after 10 wrong ones (429 RATE_LIMITED), even a right one', async () => {
    const owner = await signedIn(t, 'guessed@example.test');
    const setup = await owner.browser.json<{ secret: string }>(`${t.url}/api/auth/2fa/totp/setup`, { method: 'POST', body: '{}' });
    await owner.browser.json(`${t.url}/api/auth/2fa/totp/enable`, { method: 'POST', body: JSON.stringify({ code: await codeAt(setup.body.secret, now) }) });
    const attacker = await signedIn(t, 'guessed@example.test');
    const right = await codeAt(setup.body.secret, now + 30);
    const wrong = right === '123456' ? '654321' : '123456';
    for (let i = 0; i < 10; i++) {
      expect((await attacker.browser.json(`${t.url}/api/auth/2fa/verify`, { method: 'POST', body: JSON.stringify({ code: wrong }) })).status).toBe(400);
    }
    const limited = await attacker.browser.json<{ code: string }>(`${t.url}/api/auth/2fa/verify`, { method: 'POST', body: JSON.stringify({ code: right }) });
    expect(limited.status).toBe(429);
    expect(limited.body.code).toBe('RATE_LIMITED');
    expect((await attacker.browser.json(`${t.url}/api/user/api-keys`)).status).toBe(403);
  });

  it('the limit holds under concurrency: 500 wrong codes at once get at most 10 checked', async () => {
    const owner = await signedIn(t, 'stormed@example.test');
    const setup = await owner.browser.json<{ secret: string }>(`${t.url}/api/auth/2fa/totp/setup`, { method: 'POST', body: '{}' });
    await owner.browser.json(`${t.url}/api/auth/2fa/totp/enable`, { method: 'POST', body: JSON.stringify({ code: await codeAt(setup.body.secret, now) }) });
    const attacker = await signedIn(t, 'stormed@example.test');
    const right = await codeAt(setup.body.secret, now + 30);
    const wrong = right === '123456' ? '654321' : '123456';
    const statuses = await Promise.all(
      Array.from({ length: 500 }, () => attacker.browser.json(`${t.url}/api/auth/2fa/verify`, { method: 'POST', body: JSON.stringify({ code: wrong }) }).then((r) => r.status)),
    );
    const checked = statuses.filter((s) => s === 400).length;
    expect(statuses.filter((s) => s !== 400 && s !== 429)).toEqual([]);
    expect(checked).toBeLessThanOrEqual(10);
    expect(checked).toBeGreaterThan(0);
  });
});
