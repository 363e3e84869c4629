import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { chromiumSuite, hasChromium, signIn, SIZES } from './support.ts';

/**
 * Issue 57 part 3 in the UI: the task editor sets a time of day and reminders (before the due time
 * or at a date and time), the list shows the time and that a task has reminders, and editing keeps
 * and changes them. Along the real click path at phone and desktop sizes, against the whole system.
 * Screenshots: reminders-*.
 */

const suite = chromiumSuite('reminders', { locale: 'en-GB' });
const { newPage, shot } = suite;

interface ApiTask {
  id: string;
  title: string;
  dueDate: string | null;
  dueTime: string | null;
  reminders: ({ at: string } | { beforeDueMinutes: number })[];
}
const tasks = async (page: Page) => ((await (await page.request.get('/api/tasks?limit=100')).json()) as { tasks: ApiTask[] }).tasks;

describe.skipIf(!hasChromium)('time of day and reminders in the task editor (Chromium)', () => {
  it.each(SIZES)('set a due time and two reminders, see them in the list, then remove one (%s)', async (label, size) => {
    const page = await newPage(size);
    await signIn(page, suite.url, `reminders-${label}@example.test`);
    await page.goto(`${suite.url}/tasks`);
    await page.getByRole('button', { name: 'New task' }).click();
    const editor = page.getByTestId('task-editor');
    await editor.getByLabel('Title', { exact: true }).fill('Dentist');
    // no due date yet: the time waits for one, and reminders can only be at a date and time
    expect(await editor.getByLabel('Time', { exact: true }).isDisabled()).toBe(true);
    await editor.getByLabel('Due date', { exact: true }).fill('2031-07-15');
    await editor.getByLabel('Time', { exact: true }).fill('18:30');
    const reminders = page.getByTestId('reminders-editor');
    await reminders.getByLabel('Reminder kind').selectOption('before');
    await reminders.getByLabel('How long before').selectOption('30');
    await reminders.getByRole('button', { name: 'Add reminder' }).click();
    await reminders.getByLabel('Reminder kind').selectOption('at');
    await reminders.getByLabel('Reminder date and time').fill('2031-07-14T20:00');
    await reminders.getByRole('button', { name: 'Add reminder' }).click();
    await expect.poll(() => reminders.getByRole('listitem').count()).toBe(2);
    await shot(page, `editor-${label}`);
    await editor.getByRole('button', { name: 'Create task' }).click();

    await expect.poll(async () => (await tasks(page)).find((t) => t.title === 'Dentist')?.dueTime).toBe('18:30');
    const saved = (await tasks(page)).find((t) => t.title === 'Dentist')!;
    const at = await page.evaluate(() => new Date('2031-07-14T20:00').toISOString());
    expect(saved).toMatchObject({ dueDate: '2031-07-15', reminders: [{ beforeDueMinutes: 30 }, { at }] });

    // the list shows the time with the date, and that reminders are set
    const row = page.locator(`[data-task-id="${saved.id}"]`);
    await expect.poll(() => row.getByTestId('due-badge').textContent()).toMatch(/18:30$/);
    expect(await row.getByTestId('reminder-badge').textContent()).toBe('2 reminders');
    await shot(page, `list-${label}`);

    // edit: one reminder removed, the time changed; only what changed is sent
    await row.getByRole('button', { name: 'Actions for "Dentist"' }).click();
    await page.getByRole('menuitem', { name: 'Edit', exact: true }).click();
    const edit = page.getByTestId('task-editor');
    await edit.getByRole('button', { name: 'Remove reminder: 30 minutes before' }).click();
    await edit.getByLabel('Time', { exact: true }).fill('08:00');
    await edit.getByRole('button', { name: 'Save' }).click();
    await expect.poll(async () => (await tasks(page)).find((t) => t.id === saved.id)?.dueTime).toBe('08:00');
    expect((await tasks(page)).find((t) => t.id === saved.id)!.reminders).toEqual([{ at }]);
    await expect.poll(() => row.getByTestId('reminder-badge').textContent()).toBe('reminder');
  });

  it('a relative reminder without a due date is refused with a 400 naming body.reminders', async () => {
    const page = await newPage(SIZES[0]![1]);
    await signIn(page, suite.url, 'reminders-error@example.test');
    const res = await page.request.post('/api/tasks', { data: { title: 'x', reminders: [{ beforeDueMinutes: 5 }] } });
    expect(res.status()).toBe(400);
    expect(((await res.json()) as { issues: { path: string }[] }).issues[0]!.path).toBe('body.reminders');
  });
});
