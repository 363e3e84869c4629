import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { chromiumSuite, eventually, hasChromium, signIn, SIZES } from './support.ts';

/**
 * Issue 55's everyday part (bugs 8 to 11, the phone-first Today, the missing controls) along the
 * real click path in Chromium at 390 and 1280 px (screenshots under test-results/screenshots/today-*).
 */

const suite = chromiumSuite('today');

interface ApiTask {
  id: string;
  title: string;
  topicId: string | null;
  dueDate: string | null;
  priority: string;
}

const tasksOf = async (page: Page): Promise<ApiTask[]> => ((await (await page.request.get('/api/tasks?limit=500')).json()) as { tasks: ApiTask[] }).tasks;

/** Task lists answer late (a slow phone network), so a page change takes a moment. */
async function slowTaskLists(page: Page, ms: number): Promise<void> {
  await page.route(/\/api\/tasks\?/, async (route) => {
    await new Promise((r) => setTimeout(r, ms));
    await route.continue();
  });
}

describe.skipIf(!hasChromium)('bug 8: typing right after a page change', () => {
  it.each(SIZES)('what is typed while the next page loads ends up in its quick add, every character (%s)', async (label, size) => {
    const page = await suite.newPage(size);
    await signIn(page, suite.url, `typing-${label}@example.test`);
    const family = ((await (await page.request.post('/api/topics', { data: { title: 'Family' } })).json()) as { topic: { id: string } }).topic.id;
    const nav = page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Tasks' }).click();
    await page.getByRole('heading', { name: 'Tasks', level: 1 }).waitFor();
    await slowTaskLists(page, 1500);
    // Click "Today", then straight into the quick add on screen and type at a person's pace.
    await nav.getByRole('link', { name: 'Today' }).click();
    await page.getByLabel('Quick add a task').click();
    await page.keyboard.type('Call grandma sunday #fam', { delay: 50 });
    await page.getByTestId('briefing').waitFor(); // Today is on screen now
    await suite.shot(page, 'bug8-typed');
    expect(await page.getByLabel('Quick add a task').inputValue()).toBe('Call grandma sunday #fam');
    await page.keyboard.press('Enter');
    await page.locator('.toast').filter({ hasText: 'Added "Call grandma"' }).waitFor();
    const made = (await tasksOf(page)).find((t) => t.title === 'Call grandma');
    expect(made).toMatchObject({ topicId: family });
    expect(new Date(`${made!.dueDate}T12:00:00Z`).getUTCDay()).toBe(0);

    // The other way, with the `n` shortcut pressed right after the click.
    await nav.getByRole('link', { name: 'Tasks' }).click();
    await page.keyboard.press('n');
    await page.keyboard.type('Water the plants', { delay: 50 });
    await page.getByRole('heading', { name: 'Tasks', level: 1 }).waitFor();
    await eventually(() => page.evaluate(() => document.activeElement?.id)).toBe('quick-add');
    expect(await page.getByLabel('Quick add a task').inputValue()).toBe('Water the plants');
    await page.keyboard.press('Enter');
    await eventually(async () => (await tasksOf(page)).map((t) => t.title).sort()).toEqual(['Call grandma', 'Water the plants']);
    await suite.shot(page, 'bug8-saved');
  });
});

describe.skipIf(!hasChromium)('bug 9: onboarding', () => {
  it.each(SIZES)('another timezone is chosen inside the wizard, focus goes with each step, and the first task takes quick-add phrases with chips (%s)', async (label, size) => {
    const page = await suite.newPage(size);
    await signIn(page, suite.url, `onboard-${label}@example.test`);
    await page.getByTestId('onboarding-hint').getByRole('link', { name: 'Take the two-minute setup' }).click();
    await page.getByRole('heading', { name: 'Your timezone' }).waitFor();
    // "Choose another" stays in the wizard, with the zone list in focus.
    await page.getByRole('button', { name: 'Choose another' }).click();
    expect(new URL(page.url()).pathname).toBe('/onboarding');
    await eventually(() => page.evaluate(() => document.activeElement?.id)).toBe('ob-zone');
    await page.getByLabel('Timezone', { exact: true }).selectOption('Europe/Berlin');
    await suite.shot(page, 'bug9-zone');
    await page.getByRole('button', { name: 'Use Europe/Berlin' }).click();
    // Step 2 takes the focus in its field: typing goes straight on.
    await page.getByRole('heading', { name: 'Your first task' }).waitFor();
    await eventually(() => page.evaluate(() => document.activeElement?.id)).toBe('ob-task');
    await page.keyboard.type('Water the plants every sat !high');
    const chips = page.getByTestId('ob-task-preview').getByRole('list', { name: 'Understood' });
    await chips.getByText('Every Saturday').waitFor();
    await chips.getByText('High priority').waitFor();
    expect(await page.getByTestId('ob-task-highlights').locator('mark').allTextContents()).toEqual(['every sat', '!high']);
    await suite.shot(page, 'bug9-first-task');
    await page.keyboard.press('Enter');
    // Step 3's heading has the focus.
    await page.getByRole('heading', { name: "You're set" }).waitFor();
    await eventually(() => page.evaluate(() => document.activeElement?.textContent?.trim())).toBe("You're set");
    const profile = ((await (await page.request.get('/api/settings/profile')).json()) as { profile: { timezone: string } }).profile;
    expect(profile.timezone).toBe('Europe/Berlin');
    const [task] = (await (await page.request.get('/api/tasks')).json()).tasks as { title: string; type: string; priority: string; recurrenceType: string; recurrenceWeekdays: number[] }[];
    expect(task).toMatchObject({ title: 'Water the plants', type: 'RECURRING', priority: 'HIGH', recurrenceType: 'WEEKDAY', recurrenceWeekdays: [5] });
    await suite.shot(page, 'bug9-done');
    await page.getByRole('button', { name: 'Go to today' }).click();
    await page.getByTestId('briefing').waitFor();
    expect(await page.getByTestId('onboarding-hint').count()).toBe(0);
  });

  it.each(SIZES)('a first task of only a date is not saved without a title, and says what is missing (%s)', async (label, size) => {
    const page = await suite.newPage(size);
    await signIn(page, suite.url, `onboard-empty-${label}@example.test`);
    await page.goto('/onboarding');
    await page.getByRole('button', { name: /^Use / }).click();
    await page.getByLabel('What do you want to get done?').fill('tomorrow !high');
    await page.getByRole('button', { name: 'Add and continue' }).click();
    await page.getByRole('alert').filter({ hasText: 'Add a few words saying what the task is' }).waitFor();
    expect(await page.getByLabel('What do you want to get done?').getAttribute('aria-invalid')).toBe('true');
    expect((await (await page.request.get('/api/tasks')).json()).tasks).toEqual([]);
    await suite.shot(page, 'bug9-no-title');
  });
});

const dayOf = (page: Page, offset = 0) =>
  page.evaluate((o) => {
    const d = new Date(`${new Intl.DateTimeFormat('en-CA', { timeZone: 'UTC' }).format(new Date())}T00:00:00Z`);
    d.setUTCDate(d.getUTCDate() + o);
    return d.toISOString().slice(0, 10);
  }, offset);

async function createTask(page: Page, data: Record<string, unknown>): Promise<string> {
  const r = await page.request.post('/api/tasks', { data });
  expect(r.status()).toBe(201);
  return ((await r.json()) as { task: { id: string } }).task.id;
}

const serverTask = async (page: Page, id: string) =>
  ((await (await page.request.get(`/api/tasks/${id}`)).json()) as { task: { snoozedUntil: string | null; pausedAt: string | null; completedAt: string | null; topicId: string | null; priority: string } }).task;

describe.skipIf(!hasChromium)('phone-first Today', () => {
  it.each(SIZES)('what is due leads (overdue, then today, each by priority), then the quest; tasks are on the first screen (%s)', async (label, size) => {
    const page = await suite.newPage(size);
    await signIn(page, suite.url, `today-first-${label}@example.test`);
    const today = await dayOf(page);
    const yesterday = await dayOf(page, -1);
    // Created in an order that is not the priority order (the server lists by sort order, creation).
    await createTask(page, { title: 'Late normal', dueDate: yesterday });
    await createTask(page, { title: 'Late high', dueDate: yesterday, priority: 'HIGH' });
    await createTask(page, { title: 'Today someday', dueDate: today, priority: 'SOMEDAY' });
    await createTask(page, { title: 'Today normal', dueDate: today });
    await createTask(page, { title: 'Today high', dueDate: today, priority: 'HIGH' });
    const paused = await createTask(page, { title: 'Today paused', dueDate: today });
    expect((await page.request.post(`/api/tasks/${paused}/pause`, { data: {} })).status()).toBe(200);
    await page.reload();
    const dueList = page.getByRole('list', { name: 'Tasks due today' });
    await dueList.getByText('Today high').waitFor();
    await page.getByTestId('daily-quest').getByTestId('quest-title').waitFor();
    const titles = (name: string) => page.getByRole('list', { name }).locator('.title').allTextContents();
    expect(await titles('Overdue tasks')).toEqual(['Late high', 'Late normal']);
    // bug 10: "Due today" by priority; a paused task waits elsewhere
    expect(await titles('Tasks due today')).toEqual(['Today high', 'Today normal', 'Today someday']);
    expect(await page.getByTestId('briefing').textContent()).toContain('3 due today, 2 overdue.');
    // Order on the page: quick add, overdue, due today, the quest, then the game cards.
    const top = async (testId: string) => (await page.getByTestId(testId).boundingBox())!.y;
    const order = ['today-quick-add', 'today-overdue', 'today-due', 'daily-quest', 'streak-card'];
    const ys = await Promise.all(order.map(top));
    expect([...ys].sort((a, b) => a - b)).toEqual(ys);
    // At 390 × 844 the first task of each list is on the first screen, above the tab bar.
    const firstScreen = size.height - (label === 'phone' ? 64 : 0);
    for (const name of ['Overdue tasks', 'Tasks due today']) {
      const box = (await page.getByRole('list', { name }).locator('li').first().boundingBox())!;
      expect(box.y + box.height, name).toBeLessThanOrEqual(firstScreen);
    }
    // One thumb: the box and the menu are big enough to hit on a phone.
    if (label === 'phone') {
      const row = dueList.getByTestId('task-row').first();
      const check = (await row.locator('.task-check').boundingBox())!;
      const menu = (await row.getByRole('button', { name: /^Actions for/ }).boundingBox())!;
      expect(Math.min(check.width, check.height)).toBeGreaterThanOrEqual(24);
      expect(Math.min(menu.width, menu.height)).toBeGreaterThanOrEqual(44);
    }
    await suite.shot(page, 'today-first');
  });

  it.each(SIZES)('bug 10: a snoozed task leaves Overdue with one badge, and its toast has Undo; the chosen energy looks chosen (%s)', async (label, size) => {
    const page = await suite.newPage(size);
    await signIn(page, suite.url, `today-snooze-${label}@example.test`);
    const id = await createTask(page, { title: 'Return the parcel', dueDate: await dayOf(page, -2), priority: 'HIGH' });
    await createTask(page, { title: 'Also late', dueDate: await dayOf(page, -1) });
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Tasks' }).click();
    const row = page.getByTestId('task-row').filter({ hasText: 'Return the parcel' });
    const groupOf = () => row.evaluate((el) => el.closest('.task-group')?.getAttribute('data-group'));
    await eventually(groupOf).toBe('Overdue');
    await page.getByRole('button', { name: 'Actions for "Return the parcel"' }).click();
    await page.getByRole('menuitem', { name: 'Snooze: tomorrow' }).click();
    const toastEl = page.locator('.toast').filter({ hasText: 'Snoozed until' });
    await toastEl.waitFor();
    await eventually(groupOf).toBe('Snoozed');
    // one badge says why it waits; none says overdue beside it
    expect(await row.getByTestId('due-badge').count()).toBe(0);
    expect((await row.locator('.badge').allTextContents()).filter((b) => /snoozed|overdue|ago/i.test(b))).toEqual([expect.stringMatching(/^snoozed until /)]);
    expect((await serverTask(page, id)).snoozedUntil).toBe(await dayOf(page, 1));
    await suite.shot(page, 'bug10-snoozed');
    await toastEl.getByRole('button', { name: 'Undo' }).click();
    await eventually(async () => (await serverTask(page, id)).snoozedUntil).toBeNull();
    await eventually(groupOf).toBe('Overdue');

    // The energy level picked stands out from the others (not only for screen readers).
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Today' }).click();
    const energy = page.getByTestId('energy-checkin');
    await energy.getByRole('button', { name: 'Medium' }).click();
    await eventually(() => energy.getByRole('button', { name: 'Medium' }).getAttribute('aria-pressed')).toBe('true');
    const bg = (name: string) => energy.getByRole('button', { name }).evaluate((el) => getComputedStyle(el).backgroundColor);
    expect(await bg('Medium')).not.toBe(await bg('Low'));
    expect(await bg('Low')).toBe(await bg('High'));
    await suite.shot(page, 'bug10-energy');
  });

  it.each(SIZES)('pause and resume from the row menu: a paused task leaves Today, waits under Paused, and comes back (%s)', async (label, size) => {
    const page = await suite.newPage(size);
    await signIn(page, suite.url, `today-pause-${label}@example.test`);
    const id = await createTask(page, { title: 'Paint the fence', dueDate: await dayOf(page) });
    await page.reload();
    const dueList = page.getByRole('list', { name: 'Tasks due today' });
    await dueList.getByText('Paint the fence').waitFor();
    await page.getByRole('button', { name: 'Actions for "Paint the fence"' }).click();
    await page.getByRole('menuitem', { name: 'Pause' }).click();
    await page.locator('.toast').filter({ hasText: 'Paused "Paint the fence"' }).waitFor();
    await eventually(async () => (await serverTask(page, id)).pausedAt).not.toBeNull();
    await eventually(() => dueList.getByText('Paint the fence').count()).toBe(0);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Tasks' }).click();
    const row = page.getByTestId('task-row').filter({ hasText: 'Paint the fence' });
    await row.getByTestId('paused-badge').waitFor();
    expect(await row.evaluate((el) => el.closest('.task-group')?.getAttribute('data-group'))).toBe('Paused');
    await suite.shot(page, 'paused');
    await page.getByRole('button', { name: 'Actions for "Paint the fence"' }).click();
    await page.getByRole('menuitem', { name: 'Resume' }).click();
    await eventually(async () => (await serverTask(page, id)).pausedAt).toBeNull();
    await eventually(() => row.evaluate((el) => el.closest('.task-group')?.getAttribute('data-group'))).toBe('Today');
    expect(await row.getByTestId('paused-badge').count()).toBe(0);
  });
});

describe.skipIf(!hasChromium)('the missing list controls: bulk actions and sort', () => {
  it.each(SIZES)('select several tasks, move them (with Undo), delete them (sent when the toast goes), complete the rest; sort by title (%s)', async (label, size) => {
    const page = await suite.newPage(size);
    await signIn(page, suite.url, `bulk-${label}@example.test`);
    const errands = ((await (await page.request.post('/api/topics', { data: { title: 'Errands' } })).json()) as { topic: { id: string } }).topic.id;
    const ids: Record<string, string> = {};
    const made: [string, string][] = [
      ['Buy stamps', 'NORMAL'],
      ['Call the plumber', 'HIGH'],
      ['Answer letters', 'SOMEDAY'],
      ['Defrost the freezer', 'NORMAL'],
    ];
    for (const [title, priority] of made)
      ids[title] = await createTask(page, { title, priority });
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Tasks' }).click();
    await page.getByTestId('task-row').filter({ hasText: 'Buy stamps' }).waitFor();

    // Sort: a flat list in the order chosen, kept in the URL.
    await page.getByLabel('Sort').selectOption('title');
    await eventually(() => page.getByRole('list', { name: 'Tasks', exact: true }).locator('.title').allTextContents()).toEqual(['Answer letters', 'Buy stamps', 'Call the plumber', 'Defrost the freezer']);
    expect(new URL(page.url()).searchParams.get('sort')).toBe('title');

    // Select three; move them to a topic in one request; Undo puts each back.
    await page.getByRole('button', { name: 'Select', exact: true }).click();
    const bar = page.getByRole('region', { name: 'Selected tasks' });
    for (const t of ['Buy stamps', 'Call the plumber', 'Answer letters']) await page.getByRole('checkbox', { name: `Select "${t}"` }).check();
    await bar.getByText('3 selected').waitFor();
    // while selecting, a row's box selects and its own menu waits
    expect(await page.getByRole('button', { name: /^Actions for/ }).count()).toBe(0);
    await suite.shot(page, 'bulk-selected');
    const topicOf = async (title: string) => (await serverTask(page, ids[title]!)).topicId;
    await bar.getByRole('button', { name: 'Move…' }).click();
    await page.getByRole('menuitem', { name: 'Errands' }).click();
    const moved = page.locator('.toast').filter({ hasText: 'Moved 3 tasks to Errands' });
    await moved.waitFor();
    expect(await Promise.all(['Buy stamps', 'Call the plumber', 'Answer letters', 'Defrost the freezer'].map(topicOf))).toEqual([errands, errands, errands, null]);
    expect(await bar.count()).toBe(0);
    await moved.getByRole('button', { name: 'Undo' }).click();
    await eventually(() => Promise.all(['Buy stamps', 'Call the plumber', 'Answer letters'].map(topicOf))).toEqual([null, null, null]);

    // Delete two: the rows go at once; the server keeps them until the toast goes.
    await page.getByRole('button', { name: 'Select', exact: true }).click();
    await page.getByRole('checkbox', { name: 'Select "Buy stamps"' }).check();
    await page.getByRole('checkbox', { name: 'Select "Answer letters"' }).check();
    await bar.getByRole('button', { name: 'Delete' }).click();
    const deleted = page.locator('.toast').filter({ hasText: 'Deleted 2 tasks' });
    await deleted.waitFor();
    await eventually(() => page.getByTestId('task-row').filter({ hasText: /Buy stamps|Answer letters/ }).count()).toBe(0);
    expect((await page.request.get(`/api/tasks/${ids['Buy stamps']}`)).status()).toBe(200);
    await deleted.getByRole('button', { name: 'Dismiss' }).click();
    await eventually(async () => [(await page.request.get(`/api/tasks/${ids['Buy stamps']}`)).status(), (await page.request.get(`/api/tasks/${ids['Answer letters']}`)).status()]).toEqual([404, 404]);

    // Complete all that is left.
    await page.getByRole('button', { name: 'Select', exact: true }).click();
    await bar.getByRole('button', { name: 'Select all' }).click();
    await bar.getByText('2 selected').waitFor();
    await bar.getByRole('button', { name: 'Complete' }).click();
    await page.locator('.toast').filter({ hasText: 'Completed 2 tasks' }).waitFor();
    await eventually(async () => Promise.all(['Call the plumber', 'Defrost the freezer'].map(async (t) => (await serverTask(page, ids[t]!)).completedAt !== null))).toEqual([true, true]);
    await suite.shot(page, 'bulk-done');
  });
});

describe.skipIf(!hasChromium)("a topic's order: drag, or the arrow keys on the handle", () => {
  it.each(SIZES)('a sequential topic is put in order by keyboard and by dragging; the first open task is the free one (%s)', async (label, size) => {
    const page = await suite.newPage(size);
    await signIn(page, suite.url, `reorder-${label}@example.test`);
    const topic = ((await (await page.request.post('/api/topics', { data: { title: 'Move house', sequential: true } })).json()) as { topic: { id: string } }).topic.id;
    for (const title of ['Pack boxes', 'Hire a van', 'Book movers']) await createTask(page, { title, topicId: topic });
    const serverOrder = async () => ((await (await page.request.get(`/api/topics/${topic}`)).json()) as { tasks: { title: string; blocked: boolean }[] }).tasks.map((t) => `${t.title}${t.blocked ? ' (waits)' : ''}`);
    expect(await serverOrder()).toEqual(['Pack boxes', 'Hire a van (waits)', 'Book movers (waits)']);
    await page.goto(`/topics/${topic}`);
    const list = page.getByRole('list', { name: 'Tasks of Move house' });
    const shown = () => list.locator('.title').allTextContents();
    await eventually(shown).toEqual(['Pack boxes', 'Hire a van', 'Book movers']);

    // Keyboard: the handle takes the arrow keys and keeps the focus.
    const handle = page.getByRole('button', { name: 'Move "Book movers"' });
    await handle.focus();
    await page.keyboard.press('ArrowUp');
    await page.keyboard.press('ArrowUp');
    await eventually(shown).toEqual(['Book movers', 'Pack boxes', 'Hire a van']);
    expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Move "Book movers"');
    await page.getByRole('status').filter({ hasText: '"Book movers" moved to place 1 of 3.' }).waitFor();
    await eventually(serverOrder).toEqual(['Book movers', 'Pack boxes (waits)', 'Hire a van (waits)']);
    // the row that is now first is the one to do (its box is enabled), the others wait
    await eventually(() => page.getByRole('checkbox', { name: 'Complete "Pack boxes"' }).isDisabled()).toBe(true);
    expect(await page.getByRole('checkbox', { name: 'Complete "Book movers"' }).isDisabled()).toBe(false);
    // the reload that brought the waiting state kept the focus on the moved task's handle
    expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Move "Book movers"');

    // Dragging the handle: "Hire a van" goes to the top.
    const grip = (await page.getByRole('button', { name: 'Move "Hire a van"' }).boundingBox())!;
    const first = (await list.locator('li').first().boundingBox())!;
    await page.mouse.move(grip.x + grip.width / 2, grip.y + grip.height / 2);
    await page.mouse.down();
    await page.mouse.move(grip.x + grip.width / 2, first.y + 4, { steps: 8 });
    await suite.shot(page, 'reorder-dragging');
    await page.mouse.up();
    await eventually(shown).toEqual(['Hire a van', 'Book movers', 'Pack boxes']);
    await eventually(serverOrder).toEqual(['Hire a van', 'Book movers (waits)', 'Pack boxes (waits)']);
    await suite.shot(page, 'reorder-done');
  });
});
