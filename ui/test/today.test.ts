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
