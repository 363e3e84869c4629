import { describe, expect, it } from 'vitest';
import { chromiumSuite, hasChromium, signIn, SIZES } from './support.ts';

/**
 * Issue 55, bug 11: reminders switched on while no notification channel is on reach nobody, so the
 * settings say so and link to the channels; the warning goes once a channel is set up. Along the
 * real click path at phone and desktop sizes. Screenshots: reminder-channels-*.
 */

const suite = chromiumSuite('reminder-channels', { locale: 'en-GB', config: { OUTBOUND_ALLOW_LIST: '127.0.0.1' } });
const { newPage, shot } = suite;

describe.skipIf(!hasChromium)('reminders without a channel (Chromium)', () => {
  it.each(SIZES)('warns while reminders are on and no channel is, links to the channels (%s)', async (label, size) => {
    const page = await newPage(size);
    await signIn(page, suite.url, `reminder-channels-${label}@example.test`);
    await page.goto(`${suite.url}/settings/notifications`);
    const reminders = page.getByTestId('reminders');
    const warning = page.getByTestId('no-channel-warning');
    const dueToday = reminders.getByRole('checkbox', { name: 'Tasks due today' });
    // every reminder off (the default): nothing to warn about
    await page.getByRole('list', { name: 'Notification channels' }).waitFor();
    expect(await dueToday.isChecked()).toBe(false);
    expect(await warning.count()).toBe(0);

    await dueToday.check();
    await warning.waitFor();
    expect(await warning.getAttribute('role')).toBe('status');
    expect(await warning.textContent()).toContain('no notification channel is set up');
    await shot(page, `warning-${label}`);

    await warning.getByRole('link', { name: 'Set up a channel' }).click();
    await expect.poll(() => new URL(page.url()).hash).toBe('#channels');
    const alert = page.getByTestId('channel-http-alert');
    await expect.poll(() => alert.isVisible()).toBe(true);
    expect(await alert.evaluate((el) => el.getBoundingClientRect().top < window.innerHeight)).toBe(true);

    // a channel on: the warning goes (the URL is saved, never called: no test is sent)
    await alert.getByRole('button', { name: 'Set up' }).click();
    // a refused address is told in plain words by the field's label: no request path, no operator variable
    await alert.getByLabel('URL', { exact: true }).fill('http://127.0.0.2:9/alert');
    await alert.getByRole('button', { name: 'Save' }).click();
    const refused = alert.getByTestId('channel-error');
    await refused.waitFor();
    const said = (await refused.textContent())!;
    expect(said).toMatch(/^URL: resolves to a loopback address/);
    expect(said).not.toMatch(/body\.|[A-Z]+_[A-Z_]+/);
    await shot(page, `refused-${label}`);
    await alert.getByLabel('URL', { exact: true }).fill('http://127.0.0.1:9/alert');
    await alert.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => alert.getByText('on', { exact: true }).count()).toBe(1);
    await expect.poll(() => warning.count()).toBe(0);
    await shot(page, `channel-on-${label}`);
  });

  it.each(SIZES)('the ntfy form asks for your server without naming any public one (%s)', async (label, size) => {
    const page = await newPage(size);
    await signIn(page, suite.url, `ntfy-hint-${label}@example.test`);
    await page.goto(`${suite.url}/settings/notifications`);
    const ntfy = page.getByTestId('channel-ntfy');
    await ntfy.getByRole('button', { name: 'Set up' }).click();
    const server = ntfy.getByLabel('Server', { exact: true });
    const hint = await server.evaluate((el) => document.getElementById(el.getAttribute('aria-describedby')!)!.textContent);
    expect(hint).toBe("Your ntfy server's address; leave empty to use this instance's default");
    expect(await ntfy.textContent()).not.toMatch(/https?:\/\/|ntfy\.sh/);
    await shot(page, `ntfy-form-${label}`);
  });
});
