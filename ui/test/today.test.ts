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
