import { describe, expect, it } from 'vitest';
import { chromiumSuite, hasChromium, setUpAuthenticator, signIn, VIEWPORTS } from './support.ts';

/**
 * Issue 54: after the operator rotates TOTP_ENCRYPTION_KEY (the spec: every TOTP secret is invalid and
 * must be enrolled again), a user whose only factor was TOTP is not stuck under REQUIRE_2FA: signing
 * in with the identity provider leads to the enrolment page, where they set up the app again.
 */
const suite = chromiumSuite('totp-rotation', { locale: 'en-GB', config: { REQUIRE_2FA: 'true' } });

describe.skipIf(!hasChromium)('REQUIRE_2FA after a TOTP key rotation', () => {
  it('a TOTP-only user signs in, lands on /setup/2fa, sets the authenticator up again and reaches the app', async () => {
    const first = await suite.newPage(VIEWPORTS.phone);
    await signIn(first, suite.url, 'rotation@example.test', '/setup/2fa');
    const oldSecret = await setUpAuthenticator(first);
    await first.waitForURL(`${suite.url}/dashboard`);

    await suite.restart({ TOTP_ENCRYPTION_KEY: 'd'.repeat(64) });

    const page = await suite.newPage(VIEWPORTS.phone);
    await signIn(page, suite.url, 'rotation@example.test', '/setup/2fa');
    await page.getByText('requires a second factor').waitFor();
    const newSecret = await setUpAuthenticator(page);
    expect(newSecret).not.toBe(oldSecret);
    await page.waitForURL(`${suite.url}/dashboard`);
    await page.getByRole('navigation', { name: 'Main' }).waitFor();
    expect(await page.getByText('Something went wrong').count()).toBe(0);
    await suite.shot(page, 'reenrolled');
  }, 120_000);
});
