import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations, checkLayout, ensureUiBuilt, hasChromium, launchChromium, signIn, startUiSystem, totpCode, type UiSystem } from './support.ts';

/**
 * axe-core on every screen of the app (issue 24): no serious or critical violation, in light and dark,
 * at 390 and 1280 px. No rule is switched off. Each screen is reached the way a person reaches it
 * (dialogs and editors opened by clicking), with data on it so that lists, tables and badges render.
 */

let ui: UiSystem;
let browser: Browser;
const contexts: BrowserContext[] = [];

async function newPage(): Promise<Page> {
  // bypassCSP: the CSP (rightly) refuses the script the test injects (axe-core).
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, baseURL: ui.url, bypassCSP: true });
  contexts.push(context);
  return context.newPage();
}

/** Open `path` and wait until the screen has its title and its data (no request in flight). */
async function open(page: Page, path: string): Promise<void> {
  await page.goto(path);
  await page.locator('h1').first().waitFor();
  await page.waitForLoadState('networkidle');
}

beforeAll(async () => {
  if (!hasChromium) return;
  await ensureUiBuilt();
  ui = await startUiSystem({ PUBLIC_IMPRINT_NAME: 'Erika Mustermann', PUBLIC_IMPRINT_ADDRESS: 'Musterstraße 1, 12345 Musterstadt', PUBLIC_IMPRINT_EMAIL: 'legal@example.org' });
  browser = await launchChromium();
}, 240_000);

afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => undefined);
  await browser?.close();
  await ui?.stop();
});

describe.skipIf(!hasChromium)('accessibility (axe-core): no serious or critical violations on any screen', () => {
  it('every screen, light and dark, 390 and 1280 px', async () => {
    const found: string[] = [];
    const check = async (page: Page, name: string) => found.push(...(await axeViolations(page, name)));

    const anon = await newPage();
    await open(anon, '/login');
    await anon.locator('button[data-provider="oidc"]:not([disabled])').waitFor();
    await check(anon, 'login');
    for (const legal of ['impressum', 'datenschutz']) {
      await open(anon, `/${legal}`);
      await check(anon, legal);
    }

    const page = await newPage();
    await signIn(page, ui.url, 'axe@example.test');
    const me = (await (await page.request.get('/api/auth/me')).json()) as { id: string };
    // Data on every screen: a topic with tasks (overdue, today, later, recurring), a wish, a webhook.
    const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
    const topic = ((await (await page.request.post('/api/topics', { data: { title: 'Home', sequential: true } })).json()) as { topic: { id: string } }).topic;
    for (const data of [
      { title: 'Pay the electricity bill', dueDate: day(-2), priority: 'HIGH', topicId: topic.id },
      { title: 'Water the plants', dueDate: day(0), topicId: topic.id },
      { title: 'Book a holiday', dueDate: day(9), priority: 'SOMEDAY' },
      { title: 'Read a chapter', type: 'DAILY_ELIGIBLE' },
    ]) expect((await page.request.post('/api/tasks', { data })).status()).toBe(201);
    const done = ((await (await page.request.post('/api/tasks', { data: { title: 'Earn coins', coinValue: 10 } })).json()) as { task: { id: string } }).task;
    expect((await page.request.post(`/api/tasks/${done.id}/complete`, { data: {} })).status()).toBe(200);
    expect((await page.request.post('/api/wishlist', { data: { title: 'Cinema ticket', price: 8 } })).status()).toBe(201);

    await open(page, '/dashboard');
    await page.getByTestId('daily-quest').waitFor();
    await check(page, 'dashboard');
    await open(page, '/tasks');
    await page.getByTestId('task-row').first().waitFor();
    await check(page, 'tasks');
    await page.getByRole('button', { name: 'New task' }).click();
    await page.getByTestId('task-editor').getByLabel('Type').selectOption('RECURRING');
    await page.getByTestId('recurrence-preview').waitFor();
    await check(page, 'task-editor');
    await page.keyboard.press('Escape');
    // Editing an existing task: the side panel (bottom sheet on phones) beside its marked row.
    await page.getByRole('button', { name: 'Actions for "Water the plants"' }).click();
    await page.getByRole('menuitem', { name: 'Edit', exact: true }).click();
    await page.getByRole('dialog', { name: 'Edit task' }).waitFor();
    await check(page, 'task-panel');
    await page.keyboard.press('Escape');
    await page.getByTestId('task-row').first().getByRole('button', { name: /Actions for/ }).click();
    await page.getByRole('menu').waitFor();
    await check(page, 'task-row-menu');
    await page.keyboard.press('Escape');
    // A deleted row's Undo toast (then undone, so the data stays for the other screens).
    await page.getByRole('button', { name: 'Actions for "Book a holiday"' }).click();
    await page.getByRole('menuitem', { name: 'Delete' }).click();
    const undo = page.locator('.toast').getByRole('button', { name: 'Undo' });
    await undo.waitFor();
    await check(page, 'tasks-undo-toast');
    await undo.click();
    await page.getByTestId('task-row').filter({ hasText: 'Book a holiday' }).waitFor();
    await open(page, '/topics');
    await check(page, 'topics');
    await open(page, `/topics/${topic.id}`);
    await page.getByTestId('task-row').first().waitFor();
    await check(page, 'topic-detail');
    for (const path of ['/stats', '/achievements', '/review', '/wishlist', '/onboarding']) {
      await open(page, path);
      await check(page, path.slice(1));
    }
    for (const section of ['', '/notifications', '/vacation', '/integrations', '/calendar', '/security', '/api-keys']) {
      await open(page, `/settings${section}`);
      await check(page, `settings${section.replace('/', '-')}`);
    }
    // Forms that open inside settings: a notification channel, a webhook with its delivery log, TOTP enrolment.
    await open(page, '/settings/notifications');
    await page.getByTestId('channel-http-alert').getByRole('button', { name: 'Set up' }).click();
    await check(page, 'settings-notifications-setup');
    await open(page, '/settings/security');
    await page.getByTestId('totp-section').getByRole('button', { name: 'Set up an authenticator app' }).click();
    await page.getByTestId('totp-secret').waitFor();
    await check(page, 'settings-security-totp-setup');
    // The in-app confirm dialog (revoking an API key cannot be undone).
    expect((await page.request.post('/api/user/api-keys', { data: { name: 'Widget' } })).status()).toBe(201);
    await open(page, '/settings/api-keys');
    await page.getByRole('button', { name: 'Revoke', exact: true }).click();
    await page.getByTestId('confirm-dialog').waitFor();
    await check(page, 'confirm-dialog');
    await page.keyboard.press('Escape');
    await open(page, '/no-such-page');
    await check(page, 'not-found');

    // /admin, for a user listed in ADMIN_USER_IDS.
    await ui.restart({ ADMIN_USER_IDS: [me.id] });
    await open(page, '/admin');
    await page.getByTestId('admin-stats').waitFor();
    await check(page, 'admin');
    // Its tables are cards on a phone: nothing wider than the screen (the layout check), still tables for screen readers.
    await checkLayout(page, 'admin-tables');

    // The second-factor pages: forced setup (REQUIRE_2FA) and the check at sign-in.
    await ui.restart({ REQUIRE_2FA: true });
    const forced = await newPage();
    await signIn(forced, ui.url, 'axe-forced@example.test', '/setup/2fa');
    await forced.getByText('requires a second factor').waitFor();
    await check(forced, 'setup-2fa');
    await forced.getByRole('button', { name: 'Set up an authenticator app' }).click();
    const secret = (await forced.getByTestId('totp-secret').textContent())!.trim();
    await check(forced, 'setup-2fa-totp');
    await forced.getByLabel('Code from the app').fill(totpCode(secret));
    await forced.getByRole('button', { name: 'Turn on' }).click();
    await forced.getByTestId('backup-codes').waitFor();
    await check(forced, 'setup-2fa-backup-codes');
    await forced.getByRole('button', { name: 'I saved my backup codes' }).click();
    await forced.waitForURL(`${ui.url}/dashboard`);
    await forced.getByRole('button', { name: 'Sign out', exact: true }).click();
    await forced.locator('button[data-provider="oidc"]:not([disabled])').waitFor();
    await signIn(forced, ui.url, 'axe-forced@example.test', '/login/2fa');
    await forced.getByLabel('Code').waitFor();
    await check(forced, 'login-2fa');

    expect(found, `${found.length} serious/critical axe violations:\n${found.join('\n')}`).toEqual([]);
  }, 900_000);
});
