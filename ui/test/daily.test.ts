import type { Locator, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { chromiumSuite, controlsUnderToasts, enrolTotp, eventually, hasChromium, signIn, SIZES, totpCode, virtualAuthenticator } from './support.ts';

/**
 * The flows a person repeats every day (issue 24), each along the real click path with no reloads
 * between steps, at phone (390 px) and desktop (1280 px) width. Screenshots land in
 * test-results/screenshots/ (daily-*).
 */

// Webhook URLs in these tests point at loopback, which the allow list lets through (nothing is sent there).
const suite = chromiumSuite('daily', { config: { OUTBOUND_ALLOW_LIST: '127.0.0.1' } });
/** A loopback address (the discard port) that is never contacted: the webhook listens to task.deleted only, and its user deletes nothing. */
const NEVER_CONTACTED_WEBHOOK = 'http://127.0.0.1:9/never-contacted';
const { newPage, shot } = suite;

/** The app works: the page title, the main navigation and the game summary are there, and no error screen. */
async function appWorks(page: Page): Promise<void> {
  await page.locator('#main h1').first().waitFor().catch(async (err: Error) => {
    await shot(page, 'FAILED');
    const probe = await page.evaluate(async () => Promise.all(['/api/auth/me', '/api/stats', '/api/settings/profile', '/api/topics'].map(async (p) => `${p} ${(await fetch(p)).status}`)));
    throw new Error(`${err.message}\n${page.url()}\n${(await page.locator('body').innerText()).slice(0, 500)}\n${probe.join('\n')}`);
  });
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
  // The game figures: the top bar's pill, or on Today (which hides the pill) its own card.
  await page.locator('[data-testid="stats-pill"], [data-testid="streak-current"]').first().waitFor();
  expect(await page.getByText('Something went wrong').count()).toBe(0);
}

const isFocused = (l: Locator) => l.evaluate((el) => el === document.activeElement);
const focusedText = (page: Page) => page.evaluate(() => document.activeElement?.textContent?.trim());

/** Press `key` (at most 10 times) until the focused element's text is `text`. */
async function pressUntilFocused(page: Page, key: string, text: string): Promise<void> {
  for (let i = 0; i < 10 && (await focusedText(page)) !== text; i++) await page.keyboard.press(key);
  expect(await focusedText(page)).toBe(text);
}

async function signOut(page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Sign out', exact: true }).click();
  await page.locator('button[data-provider="oidc"]:not([disabled])').waitFor();
}

describe.skipIf(!hasChromium)('daily flows in Chromium, no reloads between steps', () => {
  it.each(SIZES)('after TOTP at sign-in the dashboard works at once (%s)', async (label, size) => {
    const page = await newPage(size);
    await signIn(page, suite.url, `totp-${label}@example.test`);
    const secret = await enrolTotp(page);
    await signOut(page);
    await signIn(page, suite.url, `totp-${label}@example.test`, '/login/2fa');
    // The next 30-second step: the one used for enrolment is spent (replay protection).
    await page.getByLabel('Code').fill(totpCode(secret, Date.now() + 30_000));
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.waitForURL(`${suite.url}/dashboard`);
    await appWorks(page);
    await shot(page, 'after-totp');
  });

  it.each(SIZES)('after passkey sign-in the dashboard works at once (%s)', async (label, size) => {
    const page = await newPage(size);
    await virtualAuthenticator(page);
    await signIn(page, suite.url, `passkey-${label}@example.test`);
    await page.goto('/settings/security');
    const passkeys = page.getByTestId('passkey-section');
    await passkeys.getByRole('button', { name: 'Add a passkey' }).click();
    await passkeys.getByTestId('passkey-row').waitFor();
    await signOut(page);
    await page.getByRole('button', { name: /Sign in with a passkey/ }).click();
    await page.waitForURL(`${suite.url}/dashboard`);
    await appWorks(page);
    await shot(page, 'after-passkey');
  });

  it.each(SIZES)('a passkey prompt without any passkey for this site explains what to do, not "cancelled" (%s)', async (_label, size) => {
    const page = await newPage(size);
    await virtualAuthenticator(page);
    await page.goto('/login');
    await page.getByRole('button', { name: /Sign in with a passkey/ }).click();
    const msg = page.getByRole('alert');
    await msg.waitFor();
    expect(await msg.textContent()).toMatch(/No passkey/);
    expect(await msg.textContent()).not.toMatch(/cancelled/);
    await shot(page, 'passkey-none');
  });

  it.each(SIZES)('quick add keeps focus, clears, and shows the parsed parts while typing (%s)', async (label, size) => {
    const page = await newPage(size);
    await signIn(page, suite.url, `quick-${label}@example.test`);
    const quick = page.getByLabel('Quick add a task');
    await quick.click();
    await page.keyboard.type('Call the bank tomorrow 9am !high');
    const preview = page.getByTestId('quick-add-preview');
    await preview.getByText(/^Due tomorrow at 09:00/).waitFor();
    await preview.getByText('High priority').waitFor();
    await shot(page, 'quick-add-preview');
    await page.keyboard.press('Enter');
    await page.locator('.toast').filter({ hasText: 'Added "Call the bank"' }).waitFor();
    expect(await quick.inputValue()).toBe('');
    // Straight on with the next task: the keystrokes land in quick add.
    await page.keyboard.type('Water the plants');
    await page.keyboard.press('Enter');
    await page.locator('.toast').filter({ hasText: 'Added "Water the plants"' }).waitFor();
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('quick-add');
    const tasks = (await (await page.request.get('/api/tasks?limit=50')).json()) as { tasks: { title: string; dueDate: string | null; dueTime: string | null; priority: string }[] };
    expect(tasks.tasks.map((t) => t.title).sort()).toEqual(['Call the bank', 'Water the plants']);
    expect(tasks.tasks.find((t) => t.title === 'Call the bank')).toMatchObject({ priority: 'HIGH', dueTime: '09:00' });
    await shot(page, 'quick-add-done');
  });

  it.each(SIZES)('the task list leads with what is overdue, grouped Overdue/Today/Upcoming/Someday; a search with no hit says so (%s)', async (label, size) => {
    const page = await newPage(size);
    await signIn(page, suite.url, `groups-${label}@example.test`);
    const day = (offset: number) =>
      page.evaluate((o) => {
        const d = new Date();
        d.setDate(d.getDate() + o);
        return d.toLocaleDateString('sv');
      }, offset);
    // created in the order that put the overdue task last before
    for (const [title, dueDate] of [['Someday idea', null], ['Next week', await day(7)], ['Due today', await day(0)], ['Late bill', await day(-3)]] as const) {
      expect((await page.request.post('/api/tasks', { data: { title, dueDate } })).status()).toBe(201);
    }
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Tasks' }).click();
    const groups = page.locator('.task-group');
    await groups.first().waitFor();
    expect(await groups.evaluateAll((els) => els.map((e) => e.getAttribute('data-group')))).toEqual(['Overdue', 'Today', 'Upcoming', 'Someday']);
    await expect.poll(() => page.getByRole('list', { name: 'Overdue tasks' }).getByText('Late bill').count()).toBe(1);
    await shot(page, 'task-groups');
    await page.getByLabel('Search').fill('xyz');
    await page.getByText('No tasks match "xyz"').waitFor();
  });

  it.each(SIZES)('the task editor takes focus when it opens, closes with Escape and gives focus back to what opened it (%s)', async (label, size) => {
    const page = await newPage(size);
    await signIn(page, suite.url, `editor-keys-${label}@example.test`);
    expect((await page.request.post('/api/tasks', { data: { title: 'Renew passport' } })).status()).toBe(201);
    // The Tasks page refetches the topics; held here until the menu is open, so they arrive under it.
    let releaseTopics!: () => void;
    const topicsHeld = new Promise<void>((resolve) => (releaseTopics = resolve));
    await page.route('**/api/topics', async (route) => {
      await topicsHeld;
      await route.fallback();
    });
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Tasks' }).click();
    // Edit is in the row's actions menu: open it from the keyboard, choose Edit.
    const menuButton = page.getByRole('button', { name: 'Actions for "Renew passport"' });
    await menuButton.focus();
    await page.keyboard.press('Enter');
    await page.getByRole('menuitem', { name: 'Edit' }).waitFor();
    await pressUntilFocused(page, 'ArrowDown', 'Edit');
    // A topic made elsewhere arrives with the held refetch: the menu's items are rendered anew (it
    // gains a Topic group) and the focus stays on Edit instead of falling to the page.
    expect((await page.request.post('/api/topics', { data: { title: 'Errands' } })).status()).toBe(201);
    releaseTopics();
    await page.getByRole('menuitem', { name: 'Errands' }).waitFor();
    expect(await focusedText(page)).toBe('Edit');
    await page.unroute('**/api/topics');
    await page.keyboard.press('Enter');
    const editor = page.getByTestId('task-editor');
    await editor.waitFor();
    await expect.poll(() => page.evaluate(() => (document.activeElement as HTMLInputElement | null)?.value)).toBe('Renew passport');
    await page.keyboard.press('Escape');
    await editor.waitFor({ state: 'detached' });
    await expect.poll(() => isFocused(menuButton)).toBe(true);
    // the same for a new task: focus lands in the empty title, Escape returns to "New task"
    const newTask = page.getByRole('button', { name: 'New task' });
    await newTask.click();
    await expect.poll(() => page.evaluate(() => document.activeElement?.closest('[data-testid="task-editor"]') !== null)).toBe(true);
    await page.keyboard.press('Escape');
    await expect.poll(() => isFocused(newTask)).toBe(true);
  });

  it.each(SIZES)('after completing a task from the keyboard Undo is one Tab away; the row stays ticked until its toast goes, then focus moves on (%s)', async (label, size) => {
    const page = await newPage(size);
    await signIn(page, suite.url, `keys-complete-${label}@example.test`);
    const ids: Record<string, string> = {};
    for (const title of ['Pay rent', 'Call mum']) ids[title] = ((await (await page.request.post('/api/tasks', { data: { title } })).json()) as { task: { id: string } }).task.id;
    const today = await page.evaluate(() => new Date().toLocaleDateString('sv'));
    ids['Water the plants'] = ((await (await page.request.post('/api/tasks', { data: { title: 'Water the plants', type: 'RECURRING', recurrenceType: 'INTERVAL', recurrenceInterval: 1, dueDate: today } })).json()) as { task: { id: string } }).task.id;
    const task = async (title: string) => ((await (await page.request.get(`/api/tasks/${ids[title]}`)).json()) as { task: { completedAt: string | null; nextDueDate: string | null } }).task;
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Tasks' }).click();
    const check = (title: string) => page.getByRole('checkbox', { name: `Complete "${title}"` });
    const ticked = (title: string) => page.getByRole('checkbox', { name: `Reopen "${title}"` });
    const rowUndo = (title: string) => page.getByRole('button', { name: `Undo completing "${title}"` });
    const row = (title: string) => page.getByTestId('task-row').filter({ hasText: title });

    await check('Pay rent').focus();
    await page.keyboard.press('Space');
    const toast = page.locator('.toast').filter({ hasText: 'Completed "Pay rent"' });
    // The pointer resting on the toast keeps it (and the row) up, however slow the steps below are.
    await toast.hover();
    await expect.poll(async () => (await task('Pay rent')).completedAt).not.toBeNull();
    // The row stays where it was, ticked; the focus stays on its box; Undo is the next Tab.
    await expect.poll(() => isFocused(ticked('Pay rent'))).toBe(true);
    await page.keyboard.press('Tab');
    await expect.poll(() => isFocused(rowUndo('Pay rent'))).toBe(true);
    // …and in sight: no toast over it (the achievement news comes up too), nor over anything else that matters.
    await page.locator('.toast').filter({ hasText: 'Achievement unlocked' }).waitFor();
    expect(await controlsUnderToasts(page)).toEqual([]);
    await shot(page, 'complete-undo-one-tab');
    await page.keyboard.press('Enter');
    await expect.poll(async () => (await task('Pay rent')).completedAt).toBeNull();
    // Reopened: back on its box, the toast gone with the Undo.
    await expect.poll(() => isFocused(check('Pay rent'))).toBe(true);
    await toast.waitFor({ state: 'detached' });

    // Completed again and left alone (the pointer away): when the toast goes the row leaves, and focus moves to the next row.
    await page.mouse.move(0, 0);
    await page.keyboard.press('Space');
    await toast.waitFor();
    await toast.waitFor({ state: 'detached', timeout: 30_000 });
    await row('Pay rent').waitFor({ state: 'detached' });
    await expect.poll(() => isFocused(check('Call mum'))).toBe(true);
    expect((await task('Pay rent')).completedAt).not.toBeNull();

    // A recurring task the same way: ticked in place, Undo one Tab away puts its date back.
    const before = (await task('Water the plants')).nextDueDate;
    await check('Water the plants').focus();
    await page.keyboard.press('Space');
    await page.locator('.toast').filter({ hasText: 'Done: "Water the plants" next on' }).hover();
    await expect.poll(async () => (await task('Water the plants')).nextDueDate).not.toBe(before);
    await expect.poll(() => isFocused(ticked('Water the plants'))).toBe(true);
    await page.keyboard.press('Tab');
    await expect.poll(() => isFocused(rowUndo('Water the plants'))).toBe(true);
    await page.keyboard.press('Enter');
    await expect.poll(async () => (await task('Water the plants')).nextDueDate).toBe(before);
    await expect.poll(() => isFocused(check('Water the plants'))).toBe(true);
  });

  it.each(SIZES)("completing today's quest from the keyboard leaves Undo one Tab away (%s)", async (label, size) => {
    const page = await newPage(size);
    await signIn(page, suite.url, `keys-quest-${label}@example.test`);
    const id = ((await (await page.request.post('/api/tasks', { data: { title: 'Sort the post' } })).json()) as { task: { id: string } }).task.id;
    const completedAt = async () => ((await (await page.request.get(`/api/tasks/${id}`)).json()) as { task: { completedAt: string | null } }).task.completedAt;
    // away and back so that Today loads its quest afresh (the task was created behind its back)
    const nav = page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Tasks' }).click();
    await page.getByRole('heading', { name: 'Tasks', level: 1 }).waitFor();
    await nav.getByRole('link', { name: 'Today' }).click();
    const quest = page.getByTestId('daily-quest');
    await quest.getByText('Sort the post').waitFor();
    await quest.getByRole('button', { name: 'Complete' }).focus();
    await page.keyboard.press('Enter');
    const done = quest.getByTestId('quest-done');
    await done.waitFor();
    // The pointer resting on its toast keeps one up for the checks below.
    await page.locator('.toast').filter({ hasText: 'Quest complete!' }).hover();
    await expect.poll(completedAt).not.toBeNull();
    // The Complete button is gone; the focus is on the message, and Undo is the next Tab.
    await expect.poll(() => isFocused(done)).toBe(true);
    // The toasts that came up moved the page rather than cover the message in focus.
    await page.locator('.toast').filter({ hasText: 'Achievement unlocked' }).waitFor();
    expect(await controlsUnderToasts(page)).toEqual([]);
    await page.keyboard.press('Tab');
    await expect.poll(() => focusedText(page)).toBe('Undo');
    expect(await page.evaluate(() => document.activeElement?.closest('[data-testid="quest-done"]') !== null)).toBe(true);
    expect(await controlsUnderToasts(page)).toEqual([]);
    await shot(page, 'quest-undo-one-tab');
    await page.keyboard.press('Enter');
    await expect.poll(completedAt).toBeNull();
    await expect.poll(() => isFocused(quest.getByRole('button', { name: 'Complete' }))).toBe(true);
  });

  it.each(SIZES)('row actions sit in one keyboard-operable menu; delete hides the row with an Undo and sends the DELETE only when the toast goes (%s)', async (label, size) => {
    const page = await newPage(size);
    await signIn(page, suite.url, `rows-${label}@example.test`);
    const ids: Record<string, string> = {};
    for (const title of ['Clean the windows', 'Fix the bike', 'Sort the photos', 'Return the library books'])
      ids[title] = ((await (await page.request.post('/api/tasks', { data: { title } })).json()) as { task: { id: string } }).task.id;
    const status = async (title: string) => (await page.request.get(`/api/tasks/${ids[title]}`)).status();
    const snoozedUntil = async (title: string) => ((await (await page.request.get(`/api/tasks/${ids[title]}`)).json()) as { task: { snoozedUntil: string | null } }).task.snoozedUntil;
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Tasks' }).click();
    const row = (title: string) => page.getByTestId('task-row').filter({ hasText: title });
    await row('Clean the windows').waitFor();
    // One control per row for its actions: no select, no Edit/Delete buttons beside it.
    expect(await row('Clean the windows').locator('select').count()).toBe(0);
    expect(await row('Clean the windows').getByRole('button').count()).toBe(1);

    // Tab from the box reaches the menu button; arrows move through the items and wrap; Escape closes, focus returns.
    const menuButton = page.getByRole('button', { name: 'Actions for "Clean the windows"' });
    await page.getByRole('checkbox', { name: 'Complete "Clean the windows"' }).focus();
    await page.keyboard.press('Tab');
    await expect.poll(() => isFocused(menuButton)).toBe(true);
    await page.keyboard.press('Enter');
    const menu = page.getByRole('menu');
    await expect.poll(() => focusedText(page)).toBe('Snooze: tomorrow');
    expect(await menu.getByRole('menuitem').allTextContents()).toEqual(['Snooze: tomorrow', 'Snooze: 3 days', 'Snooze: 1 week', 'Pause', 'Today', 'Tomorrow', 'Next week', 'High', 'Someday', 'Add a step', 'Edit', 'Delete']);
    await page.keyboard.press('ArrowDown');
    await expect.poll(() => focusedText(page)).toBe('Snooze: 3 days');
    await page.keyboard.press('ArrowUp');
    await page.keyboard.press('ArrowUp');
    await expect.poll(() => focusedText(page)).toBe('Delete');
    await page.keyboard.press('Home');
    await expect.poll(() => focusedText(page)).toBe('Snooze: tomorrow');
    await shot(page, 'row-menu');
    await page.keyboard.press('Escape');
    await menu.waitFor({ state: 'detached' });
    await expect.poll(() => isFocused(menuButton)).toBe(true);
    expect(await menuButton.getAttribute('aria-expanded')).toBe('false');

    // Snooze from the menu, then wake it up again (ArrowDown opens the menu on its first item).
    await page.keyboard.press('ArrowDown');
    await expect.poll(() => focusedText(page)).toBe('Snooze: tomorrow');
    await page.keyboard.press('Enter');
    await row('Clean the windows').getByText(/snoozed until/).waitFor();
    expect(await snoozedUntil('Clean the windows')).not.toBeNull();
    await menuButton.click();
    await page.getByRole('menuitem', { name: 'Wake up' }).click();
    await expect.poll(() => snoozedUntil('Clean the windows'), { timeout: 20_000 }).toBeNull();

    // Delete by keyboard: the row goes at once, Undo has the focus, the task is still on the server.
    const fixBike = page.getByRole('button', { name: 'Actions for "Fix the bike"' });
    await fixBike.focus();
    await page.keyboard.press('ArrowUp'); // opens on the last item, Delete
    await expect.poll(() => focusedText(page)).toBe('Delete');
    await page.keyboard.press('Enter');
    await row('Fix the bike').waitFor({ state: 'detached' });
    const deleted = page.locator('.toast').filter({ hasText: 'Deleted "Fix the bike"' });
    await expect.poll(() => isFocused(deleted.getByRole('button', { name: 'Undo' }))).toBe(true);
    await shot(page, 'row-deleted-undo');
    expect(await status('Fix the bike')).toBe(200);
    await page.keyboard.press('Enter'); // Undo
    await row('Fix the bike').waitFor();
    await expect.poll(() => isFocused(fixBike)).toBe(true);
    expect(await status('Fix the bike')).toBe(200);

    // Dismissed with Escape (the focus is on its Undo): the DELETE goes out, the row stays gone, focus is on the next row.
    await fixBike.focus();
    await page.keyboard.press('ArrowUp');
    await expect.poll(() => focusedText(page)).toBe('Delete');
    await page.keyboard.press('Enter');
    await expect.poll(() => isFocused(deleted.getByRole('button', { name: 'Undo' }))).toBe(true);
    await page.keyboard.press('Escape');
    await deleted.waitFor({ state: 'detached' });
    await expect.poll(() => status('Fix the bike')).toBe(404);
    expect(await row('Fix the bike').count()).toBe(0);
    await expect.poll(() => isFocused(page.getByRole('checkbox', { name: 'Complete "Sort the photos"' }))).toBe(true);

    // Left to expire (focus and pointer elsewhere): the DELETE goes out when the toast does.
    await page.getByRole('button', { name: 'Actions for "Sort the photos"' }).click();
    await page.getByRole('menuitem', { name: 'Delete' }).click();
    const expiring = page.locator('.toast').filter({ hasText: 'Deleted "Sort the photos"' });
    await page.getByRole('heading', { level: 1, name: 'Tasks' }).click();
    expect(await status('Sort the photos')).toBe(200);
    await expiring.waitFor({ state: 'detached', timeout: 30_000 });
    await expect.poll(() => status('Sort the photos'), { timeout: 20_000 }).toBe(404);

    // The page is left while the Undo is still up: the DELETE is sent on the way out, nothing comes back.
    await page.getByRole('button', { name: 'Actions for "Return the library books"' }).click();
    await page.getByRole('menuitem', { name: 'Delete' }).click();
    await page.locator('.toast').filter({ hasText: 'Deleted "Return the library books"' }).waitFor();
    expect(await status('Return the library books')).toBe(200);
    await page.goto('about:blank');
    await expect.poll(() => status('Return the library books'), { timeout: 20_000 }).toBe(404);
  });

  it.each(SIZES)('every editor that opens in place takes focus, closes with Escape and gives focus back (%s)', async (label, size) => {
    const page = await newPage(size);
    await signIn(page, suite.url, `editors-${label}@example.test`);
    expect((await page.request.post('/api/settings/webhooks', { data: { url: NEVER_CONTACTED_WEBHOOK, events: ['task.deleted'] } })).status()).toBe(201);
    /** Open from the keyboard, focus is inside the form; Escape closes it and focus is back on the opener. */
    const escapeRoundTrip = async (opener: Locator, form: Locator) => {
      await opener.focus();
      await page.keyboard.press('Enter');
      await expect.poll(() => form.evaluate((f) => f.contains(document.activeElement) && document.activeElement !== f)).toBe(true);
      await page.keyboard.press('Escape');
      await form.waitFor({ state: 'detached' });
      await expect.poll(() => isFocused(opener)).toBe(true);
    };
    const nav = page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Topics' }).click();
    const newTopic = page.getByRole('button', { name: 'New topic' });
    await escapeRoundTrip(newTopic, page.getByRole('form', { name: 'New topic' }));
    // Saved with Enter: the form goes and focus is back on "New topic" as well.
    await page.keyboard.press('Enter');
    await page.keyboard.type('Garden');
    await page.keyboard.press('Enter');
    await page.getByRole('link', { name: /Garden/ }).waitFor();
    await expect.poll(() => isFocused(newTopic)).toBe(true);
    const garden = ((await (await page.request.get('/api/topics')).json()) as { topics: { id: string; title: string }[] }).topics.find((t) => t.title === 'Garden')!.id;
    await page.getByRole('link', { name: /Garden/ }).click();
    await escapeRoundTrip(page.getByRole('button', { name: 'Edit topic' }), page.getByRole('form', { name: 'Edit topic' }));

    await nav.getByRole('link', { name: 'Settings' }).click();
    const sections = page.getByRole('navigation', { name: 'Section' });
    await sections.getByRole('link', { name: 'Notifications' }).click();
    const alert = page.getByTestId('channel-http-alert');
    await escapeRoundTrip(alert.getByRole('button', { name: 'Set up' }), alert.getByRole('form'));
    await sections.getByRole('link', { name: 'Webhooks' }).click();
    const endpoint = page.getByTestId('webhook-endpoint').filter({ hasText: NEVER_CONTACTED_WEBHOOK });
    await escapeRoundTrip(endpoint.getByRole('button', { name: 'Edit', exact: true }), endpoint.getByRole('form', { name: 'Edit webhook' }));
    // Setting up an authenticator app opens in place too: focus in the code field, Escape goes back.
    await sections.getByRole('link', { name: 'Security' }).click();
    const totp = page.getByTestId('totp-section');
    await escapeRoundTrip(totp.getByRole('button', { name: 'Set up an authenticator app' }), totp.getByRole('group', { name: /Scan this code/ }));
    // …and so does its Cancel button.
    await totp.getByRole('button', { name: 'Set up an authenticator app' }).click();
    await totp.getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(() => isFocused(totp.getByRole('button', { name: 'Set up an authenticator app' }))).toBe(true);

    // The task panel (sheet on a phone), opened from a row's menu on Today and on a topic: focus in
    // its title, Escape closes it, focus back on the row's menu button.
    expect((await page.request.post('/api/tasks', { data: { title: 'Rake the leaves', dueDate: await page.evaluate(() => new Date().toLocaleDateString('sv')), topicId: garden } })).status()).toBe(201);
    for (const place of ['Today', 'Topics'] as const) {
      await nav.getByRole('link', { name: place }).click();
      if (place === 'Topics') await page.getByRole('link', { name: /Garden/ }).click();
      const menuButton = page.getByRole('button', { name: 'Actions for "Rake the leaves"' });
      await menuButton.focus();
      await page.keyboard.press('ArrowUp'); // opens on the last item, Delete; Edit is just above
      await page.keyboard.press('ArrowUp');
      await expect.poll(() => focusedText(page)).toBe('Edit');
      await page.keyboard.press('Enter');
      const panel = page.getByRole('dialog', { name: 'Edit task' });
      await expect.poll(() => page.evaluate(() => (document.activeElement as HTMLInputElement | null)?.value)).toBe('Rake the leaves');
      await page.keyboard.press('Escape');
      await panel.waitFor({ state: 'detached' });
      await expect.poll(() => isFocused(menuButton)).toBe(true);
    }
  });

  it.each(SIZES)('phones get a floating add button and tab bars that scroll instead of wrapping (%s)', async (label, size) => {
    const page = await newPage(size);
    await signIn(page, suite.url, `phone-${label}@example.test`);
    for (let i = 1; i <= 12; i++) expect((await page.request.post('/api/tasks', { data: { title: `Chore number ${i}` } })).status()).toBe(201);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Tasks' }).click();
    await page.getByTestId('task-row').nth(11).waitFor();
    const fab = page.getByRole('button', { name: 'Add a task' });
    if (size.width > 760) {
      expect(await fab.isVisible()).toBe(false);
    } else {
      await page.evaluate(() => window.scrollTo(0, document.scrollingElement!.scrollHeight));
      await fab.click();
      await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe('quick-add');
      expect(await page.getByLabel('Quick add a task').isVisible()).toBe(true);
      await page.keyboard.type('Buy milk');
      await page.keyboard.press('Enter');
      await page.locator('.toast').filter({ hasText: 'Added "Buy milk"' }).waitFor();
      await shot(page, 'fab');
    }
    // Settings tabs: one line; on a phone it scrolls sideways and keeps the current tab in sight.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Settings' }).click();
    const tabs = page.getByRole('navigation', { name: 'Section' });
    await tabs.getByRole('link', { name: 'API keys' }).click();
    await page.waitForURL(/\/settings\/api-keys$/);
    // Back to the first tab and forward again (no click that would scroll the bar for us).
    await tabs.getByRole('link', { name: 'Profile' }).click();
    await page.waitForURL(/\/settings$/);
    await page.goBack();
    await page.waitForURL(/\/settings\/api-keys$/);
    const bar = await tabs.evaluate((nav) => {
      const links = [...nav.querySelectorAll('a')];
      const current = nav.querySelector('[aria-current="page"]')!.getBoundingClientRect();
      const box = nav.getBoundingClientRect();
      return { rows: new Set(links.map((a) => Math.round(a.getBoundingClientRect().top))).size, scrolls: nav.scrollWidth > nav.clientWidth, currentInSight: current.left >= box.left - 1 && current.right <= box.right + 1 };
    });
    expect(bar.rows).toBe(1);
    expect(bar.currentInSight).toBe(true);
    if (size.width <= 760) expect(bar.scrolls).toBe(true);
    await shot(page, 'settings-tabs');
  });

  it.each(SIZES)('a task typed while the previous one is still saving is kept in quick add (%s)', async (label, size) => {
    const page = await newPage(size);
    await signIn(page, suite.url, `typeahead-${label}@example.test`);
    // hold the first create until the next task has been typed
    let release = () => undefined as void;
    const held = new Promise<void>((r) => (release = r));
    await page.route('**/api/tasks', async (route) => (route.request().method() === 'POST' ? held.then(() => route.continue()) : route.continue()), { times: 1 });
    const quick = page.getByLabel('Quick add a task');
    await quick.click();
    await page.keyboard.type('Book the dentist');
    await page.keyboard.press('Enter');
    await page.keyboard.type('Pay rent');
    release();
    await page.locator('.toast').filter({ hasText: 'Added "Book the dentist"' }).waitFor();
    expect(await quick.inputValue()).toBe('Pay rent');
    // a create the server refuses puts the text back, nothing typed is lost
    await page.route('**/api/tasks', (route) => route.fulfill({ status: 400, contentType: 'application/json', body: JSON.stringify({ code: 'VALIDATION_FAILED', message: 'Not like that, try again', issues: [] }) }), { times: 1 });
    await quick.fill('Call mum');
    await page.keyboard.press('Enter');
    await page.locator('.toast').filter({ hasText: 'try again' }).waitFor();
    expect(await quick.inputValue()).toBe('Call mum');
    // one a busy server does not take waits on this device and goes out, once, when the server answers
    await page.route('**/api/tasks', (route) => route.fulfill({ status: 503, contentType: 'application/json', body: JSON.stringify({ code: 'SERVICE_UNAVAILABLE', message: 'Busy' }) }), { times: 1 });
    await quick.fill('Water the plants');
    await page.keyboard.press('Enter');
    await page.locator('.toast').filter({ hasText: 'Added "Water the plants" on this device' }).waitFor();
    const stored = async () => ((await (await page.request.get('/api/tasks?limit=100')).json()) as { tasks: { title: string }[] }).tasks.filter((t) => t.title === 'Water the plants').length;
    await eventually(stored).toBe(1);
  });

  it.each(SIZES)("postponing today's quest keeps a later deadline and gives an undated one none (%s)", async (label, size) => {
    const page = await newPage(size);
    await signIn(page, suite.url, `postpone-${label}@example.test`);
    const inThreeDays = await page.evaluate<string>(() => {
      const d = new Date();
      d.setDate(d.getDate() + 3);
      return d.toLocaleDateString('sv');
    });
    const created = await page.request.post('/api/tasks', { data: { title: 'Hand in the report', dueDate: inThreeDays } });
    expect(created.status()).toBe(201);
    const id = ((await created.json()) as { task: { id: string } }).task.id;
    // away and back so that Today loads its quest afresh (the task was created behind its back)
    const nav = page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Tasks' }).click();
    await page.getByRole('heading', { name: 'Tasks', level: 1 }).waitFor();
    await nav.getByRole('link', { name: 'Today' }).click();
    await page.waitForURL(/\/dashboard$/);
    const quest = page.getByTestId('daily-quest');
    await quest.getByText('Hand in the report').waitFor();
    const postpone = quest.getByRole('button', { name: /Postpone/ });
    await postpone.waitFor().catch(async (err: Error) => {
      await shot(page, 'postpone-FAILED');
      throw new Error(`${err.message}\n${page.url()}\nquest card: ${await quest.innerText().catch(() => '(gone)')}`);
    });
    await postpone.click();
    // The toast comes once the postponement is saved (not any toast: an earlier one may still be up).
    await page.locator('.toast').filter({ hasText: 'Postponed to tomorrow' }).waitFor();
    const after = ((await (await page.request.get(`/api/tasks/${id}`)).json()) as { task: { dueDate: string; postponeCount: number } }).task;
    expect(after).toMatchObject({ dueDate: inThreeDays, postponeCount: 1 });
    await shot(page, 'postponed');

    // A quest without a date stays without one: it is only put off until tomorrow.
    const other = await newPage(size);
    await signIn(other, suite.url, `postpone-undated-${label}@example.test`);
    const undated = ((await (await other.request.post('/api/tasks', { data: { title: 'Sort the loft' } })).json()) as { task: { id: string } }).task.id;
    await other.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Tasks' }).click();
    await other.getByRole('heading', { name: 'Tasks', level: 1 }).waitFor();
    await other.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Today' }).click();
    const otherQuest = other.getByTestId('daily-quest');
    await otherQuest.getByText('Sort the loft').waitFor();
    await otherQuest.getByRole('button', { name: /Postpone/ }).click();
    await other.locator('.toast').filter({ hasText: 'Postponed to tomorrow' }).waitFor();
    const tomorrow = await other.evaluate(() => new Date(Date.now() + 86_400_000).toLocaleDateString('sv'));
    expect(((await (await other.request.get(`/api/tasks/${undated}`)).json()) as { task: unknown }).task).toMatchObject({ dueDate: null, snoozedUntil: tomorrow, postponeCount: 1 });
  });

  it.each(SIZES)('offline, the service worker serves route chunks and the app shell; a reload offline gets the app shell, not the browser error (%s)', async (label, size) => {
    const page = await newPage(size, { serviceWorkers: 'allow' });
    await signIn(page, suite.url, `offline-${label}@example.test`);
    await appWorks(page);
    // The worker is in charge of this page and has cached this build's files.
    await page.waitForFunction(async () => navigator.serviceWorker.controller !== null && (await caches.keys()).some((k) => k.startsWith('app-')));
    await page.waitForFunction(async () => {
      const c = await caches.open((await caches.keys()).find((k) => k.startsWith('app-'))!);
      return (await c.keys()).some((r) => /\/assets\/Progress-/.test(r.url));
    });
    await page.context().setOffline(true);
    // Progress has not been opened yet: its chunk comes from the cache.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Progress' }).click();
    await page.waitForURL(/\/stats$/);
    await page.locator('#main h1').first().waitFor();
    expect(await page.getByText('dynamically imported module').count()).toBe(0);
    await shot(page, 'offline-navigation');
    // A reload offline gets the cached app shell from the worker, not the browser's error page.
    await page.reload();
    expect(await page.title()).toBe('Task Service');
    await page.locator('#root').waitFor({ state: 'attached' });
    await shot(page, 'offline-reload');
    // Back online, the next navigation loads normally.
    await page.context().setOffline(false);
    await page.goto('/dashboard');
    await appWorks(page);
  });

  it.each(SIZES)('a screen whose chunk fails to load offers an in-app retry that works once the network is back (%s)', async (label, size) => {
    const page = await newPage(size);
    await signIn(page, suite.url, `chunk-${label}@example.test`);
    await appWorks(page);
    await page.route(/\/assets\/Topics-[\w-]+\.js$/, (route) => route.abort('internetdisconnected'));
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Topics' }).click();
    const error = page.getByTestId('error-screen');
    await error.getByText('This screen could not be loaded').waitFor();
    // The navigation stays usable around the failed screen.
    await page.getByRole('navigation', { name: 'Main' }).waitFor();
    await shot(page, 'chunk-failed');
    await page.unroute(/\/assets\/Topics-[\w-]+\.js$/);
    await error.getByRole('button', { name: 'Try again' }).click();
    await page.getByRole('heading', { level: 1, name: 'Topics' }).waitFor();
  });

  it.each(SIZES)('a signed-in non-admin opening /admin gets 403 with a styled page inside the app (%s)', async (label, size) => {
    const page = await newPage(size);
    await signIn(page, suite.url, `notadmin-${label}@example.test`);
    const res = await page.goto('/admin');
    expect(res!.status()).toBe(403);
    await page.getByRole('heading', { level: 1, name: 'Not allowed' }).waitFor();
    expect(await page.getByRole('alert').textContent()).toMatch(/administrators/);
    await page.getByRole('navigation', { name: 'Main' }).waitFor();
    // Navigation icons are drawn as SVG, never as font glyphs that may be missing.
    expect(await page.getByRole('navigation', { name: 'Main' }).locator('svg').count()).toBeGreaterThanOrEqual(5);
    await shot(page, 'admin-not-allowed');
  });
});
