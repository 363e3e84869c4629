import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations, checkLayout, ensureUiBuilt, eventually, hasChromium, launchChromium, signIn, startUiSystem, totpCode, virtualAuthenticator, type UiSystem } from './support.ts';

/**
 * axe-core on every screen of the app (issue 24): no serious or critical violation, in light and dark,
 * at 390 and 1280 px. No rule is switched off. Each screen is reached the way a person reaches it
 * (dialogs, editors, menus and forms opened by clicking), with data on it so that lists, tables,
 * delivery logs and badges render, and in the states between: a toast up, a row just completed,
 * quick add with highlights, errors shown.
 */

let ui: UiSystem;
let browser: Browser;
const contexts: BrowserContext[] = [];
/** A loopback receiver for the webhook and HTTP Alert deliveries whose logs are checked. */
let receiver: Server;
let receiverUrl: string;

async function newPage(): Promise<Page> {
  // bypassCSP: the CSP (rightly) refuses the script the test injects (axe-core).
  // No service worker: it would answer the chunk request that a check below makes fail.
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, baseURL: ui.url, bypassCSP: true, serviceWorkers: 'block' });
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
  receiver = createServer((req, res) => req.resume().on('end', () => res.writeHead(204).end()));
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  ui = await startUiSystem({
    PUBLIC_IMPRINT_NAME: 'Erika Mustermann',
    PUBLIC_IMPRINT_ADDRESS: 'Musterstraße 1, 12345 Musterstadt',
    PUBLIC_IMPRINT_EMAIL: 'legal@example.org',
    OUTBOUND_ALLOW_LIST: '127.0.0.1',
  });
  browser = await launchChromium();
}, 240_000);

afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => undefined);
  await browser?.close();
  await ui?.stop();
  receiver?.close();
});

describe.skipIf(!hasChromium)('accessibility (axe-core): no serious or critical violations on any screen', () => {
  it('every screen, light and dark, 390 and 1280 px', async () => {
    const found: string[] = [];
    const check = async (page: Page, name: string) => found.push(...(await axeViolations(page, name)));

    const anon = await newPage();
    await open(anon, '/login');
    await anon.locator('button[data-provider="oidc"]:not([disabled])').waitFor();
    await check(anon, 'login');
    // The passkey prompt with no passkey for this site: the explanation in an alert.
    await virtualAuthenticator(anon);
    await anon.getByRole('button', { name: /Sign in with a passkey/ }).click();
    await anon.getByRole('alert').waitFor();
    await check(anon, 'login-passkey-none');
    for (const legal of ['impressum', 'datenschutz']) {
      await open(anon, `/${legal}`);
      await check(anon, legal);
    }
    // The page the service worker shows when even the app shell is missing offline.
    await open(anon, '/offline.html');
    await check(anon, 'offline-page');

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
    // A webhook and an HTTP Alert channel with a delivery each, so the logs (tables, cards on a phone) have rows.
    const hook = (await (await page.request.post('/api/settings/webhooks', { data: { url: `${receiverUrl}/hook`, events: ['task.completed'] } })).json()) as { id: string };
    expect((await page.request.post(`/api/settings/webhooks/${hook.id}/test`)).status()).toBe(200);
    expect((await page.request.put('/api/settings/notification-channels/http-alert', { data: { enabled: true, config: { url: `${receiverUrl}/alert` } } })).status()).toBe(200);
    expect((await page.request.post('/api/settings/notification-channels/http-alert/test')).status()).toBe(200);

    // A screen whose code does not arrive (offline, or replaced by a deploy): the in-app error with its retry.
    await page.route(/\/assets\/Topics-[\w-]+\.js$/, (route) => route.abort('internetdisconnected'));
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Topics' }).click();
    await page.getByTestId('error-screen').waitFor();
    await check(page, 'screen-load-error');
    await page.unroute(/\/assets\/Topics-[\w-]+\.js$/);

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
    // Quick add with what it recognised highlighted, in the field and under it.
    await page.getByLabel('Quick add a task').fill('Dentist next fri 9am every 2nd tue !high #home');
    await page.getByTestId('quick-add-highlights').locator('mark').first().waitFor();
    await check(page, 'tasks-quick-add-typed');
    await page.getByLabel('Quick add a task').fill('');
    // A task just completed: its row ticked in place with Undo (the focus there keeps it and its toast up).
    await page.getByRole('checkbox', { name: 'Complete "Book a holiday"' }).click();
    const rowUndo = page.getByRole('button', { name: 'Undo completing "Book a holiday"' });
    await rowUndo.focus();
    await check(page, 'tasks-completed-row');
    await rowUndo.click();
    await page.getByRole('checkbox', { name: 'Complete "Book a holiday"' }).waitFor();
    // A paused task (its own group and badge), and the list selecting for a bulk action (its bar).
    await page.getByRole('button', { name: 'Actions for "Read a chapter"' }).click();
    await page.getByRole('menuitem', { name: 'Pause' }).click();
    await page.getByTestId('paused-badge').waitFor();
    await page.getByRole('button', { name: 'Select', exact: true }).click();
    await page.getByRole('checkbox', { name: 'Select "Read a chapter"' }).check();
    await page.getByRole('region', { name: 'Selected tasks' }).getByText('1 selected').waitFor();
    await check(page, 'tasks-bulk-select');
    await page.getByRole('region', { name: 'Selected tasks' }).getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('button', { name: 'Actions for "Read a chapter"' }).click();
    await page.getByRole('menuitem', { name: 'Resume' }).click();
    await eventually(() => page.getByTestId('paused-badge').count()).toBe(0);
    await open(page, '/topics');
    await check(page, 'topics');
    await page.getByRole('button', { name: 'New topic' }).click();
    await page.getByRole('form', { name: 'New topic' }).waitFor();
    await check(page, 'topics-new-topic');
    await page.keyboard.press('Escape');
    await open(page, `/topics/${topic.id}`);
    await page.getByTestId('task-row').first().waitFor();
    await check(page, 'topic-detail');
    await page.getByRole('button', { name: 'Edit topic' }).click();
    await page.getByRole('form', { name: 'Edit topic' }).waitFor();
    await check(page, 'topic-edit');
    await page.keyboard.press('Escape');
    for (const path of ['/stats', '/achievements', '/review', '/wishlist', '/onboarding']) {
      await open(page, path);
      await check(page, path.slice(1));
    }
    // The onboarding's other two steps.
    await page.getByRole('button', { name: /^Use / }).click();
    await page.getByText('Step 2 of 3').waitFor();
    await check(page, 'onboarding-step-2');
    await page.getByRole('button', { name: 'Skip' }).click();
    await page.getByText('Step 3 of 3').waitFor();
    await check(page, 'onboarding-step-3');
    for (const section of ['', '/notifications', '/vacation', '/integrations', '/calendar', '/security', '/api-keys']) {
      await open(page, `/settings${section}`);
      await check(page, `settings${section.replace('/', '-')}`);
    }
    // Forms that open inside settings: a notification channel, a webhook with its delivery log, TOTP enrolment.
    await open(page, '/settings/notifications');
    await page.getByTestId('notification-history').waitFor();
    await page.getByTestId('channel-http-alert').getByRole('button', { name: 'Edit' }).click();
    await check(page, 'settings-notifications-setup');
    await open(page, '/settings/integrations');
    const endpoint = page.getByTestId('webhook-endpoint');
    await endpoint.getByRole('button', { name: 'Edit', exact: true }).click();
    await endpoint.getByRole('button', { name: 'Deliveries' }).click();
    await endpoint.getByTestId('delivery-row').first().waitFor();
    await check(page, 'settings-integrations-edit-and-log');
    await open(page, '/settings/calendar');
    await page.getByRole('button', { name: 'Create feed URL' }).click();
    await page.getByTestId('feed-url').waitFor();
    await check(page, 'settings-calendar-url');
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
    // A new key, shown once.
    await page.getByLabel('Name').fill('CLI');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByTestId('new-api-key').waitFor();
    await check(page, 'settings-api-keys-created');
    await open(page, '/settings/connect');
    await page.getByLabel('App', { exact: true }).fill('Phone');
    await page.getByRole('button', { name: 'Make an app password' }).click();
    await page.getByTestId('caldav-password').waitFor();
    await check(page, 'settings-connect-app');
    await open(page, '/no-such-page');
    await check(page, 'not-found');
    // /admin for someone who is not an administrator: 403, a styled page inside the app.
    await open(page, '/admin');
    await page.getByRole('heading', { name: 'Not allowed' }).waitFor();
    await check(page, 'admin-not-allowed');
    // Today's quest completed: the card's message with its Undo.
    await open(page, '/dashboard');
    await page.getByTestId('daily-quest').getByRole('button', { name: 'Complete' }).click();
    await page.getByTestId('quest-done').waitFor();
    await check(page, 'dashboard-quest-done');

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
    // …with a wrong code: the error wired to the field.
    await forced.getByLabel('Code').fill('000000');
    await forced.getByRole('button', { name: 'Verify' }).click();
    await forced.getByRole('alert').waitFor();
    await check(forced, 'login-2fa-wrong-code');

    expect(found, `${found.length} serious/critical axe violations:\n${found.join('\n')}`).toEqual([]);
  }, 900_000);
});
