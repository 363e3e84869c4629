import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { chromiumSuite, eventually, hasChromium, signIn, SIZES } from './support.ts';

/**
 * Issue 57 in the UI: a task's steps (subtasks) sit indented under its row with progress "done/all",
 * fold away and back, and take a new step from a field inside the task; the subtask rules along the
 * click path (a parent with open steps asks before it is completed, the last step offers its parent)
 * and promote to topic with its Undo. Against the whole system at phone and desktop sizes.
 * Screenshots: subtasks-*.
 */

const suite = chromiumSuite('subtasks', { locale: 'en-GB' });
const { newPage, shot } = suite;

interface ApiTask {
  id: string;
  title: string;
  parentId: string | null;
  topicId: string | null;
  completedAt: string | null;
  subtaskCount: number;
  subtasksDone: number;
}
const taskOf = async (page: Page, id: string) => {
  const res = await page.request.get(`/api/tasks/${id}`);
  return res.status() === 404 ? null : ((await res.json()) as { task: ApiTask }).task;
};
/** A task with steps, made through the API (what the test looks at is the list). */
async function withSteps(page: Page, title: string, steps: string[]): Promise<{ parent: ApiTask; steps: ApiTask[] }> {
  const parent = ((await (await page.request.post('/api/tasks', { data: { title } })).json()) as { task: ApiTask }).task;
  const res = await page.request.post(`/api/tasks/${parent.id}/breakdown`, { data: { subtaskTitles: steps } });
  expect(res.status()).toBe(201);
  return { parent, steps: ((await res.json()) as { subtasks: ApiTask[] }).subtasks };
}

describe.skipIf(!hasChromium)('subtasks in the task list (Chromium)', () => {
  it.each(SIZES)('steps under their task: progress, fold, add a step, the completion rules (%s)', async (label, size) => {
    const page = await newPage(size);
    await signIn(page, suite.url, `subtasks-${label}@example.test`);
    const { parent, steps } = await withSteps(page, 'Paint the hall', ['Buy paint', 'Tape the edges']);
    await page.goto(`${suite.url}/tasks`);
    const row = page.locator(`[data-task-id="${parent.id}"]`);
    const stepList = page.getByRole('list', { name: 'Steps of "Paint the hall"' });
    // indented under the task, in order, with its progress
    await eventually(() => stepList.getByTestId('task-row').allTextContents()).toEqual([expect.stringContaining('Buy paint'), expect.stringContaining('Tape the edges')]);
    expect(await row.getByTestId('step-progress').textContent()).toContain('0/2');
    const indent = async () => (await stepList.getByTestId('task-row').first().boundingBox())!.x - (await row.boundingBox())!.x;
    expect(await indent()).toBeGreaterThan(10);

    // a step added inside the task goes last
    const addStep = page.getByLabel('Add a step to "Paint the hall"');
    await addStep.fill('Clean the brushes');
    await addStep.press('Enter');
    await eventually(() => stepList.getByTestId('task-row').count()).toBe(3);
    expect(await stepList.getByTestId('task-row').last().textContent()).toContain('Clean the brushes');
    await eventually(() => row.getByTestId('step-progress').textContent()).toContain('0/3');
    // the top-level list holds the task once, its steps only under it
    expect(await page.locator('ul[aria-label$="tasks"] > li[data-testid="task-row"]').allTextContents()).toEqual([expect.stringContaining('Paint the hall')]);
    await shot(page, `steps-${label}`);

    // fold away and back
    const toggle = row.getByRole('button', { name: /Hide steps/ });
    expect(await toggle.getAttribute('aria-expanded')).toBe('true');
    await toggle.click();
    await eventually(() => stepList.count()).toBe(0);
    const show = row.getByRole('button', { name: /Show 3 steps/ });
    expect(await show.getAttribute('aria-expanded')).toBe('false');
    await show.click();
    await eventually(() => stepList.getByTestId('task-row').count()).toBe(3);

    // completing the task with open steps asks; "Cancel" changes nothing
    await row.getByRole('checkbox', { name: 'Complete "Paint the hall"' }).click();
    const dialog = page.getByRole('dialog', { name: 'Complete "Paint the hall"?' });
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain('3 of its steps are still open');
    await shot(page, `asks-${label}`);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await eventually(() => row.getByRole('checkbox', { name: 'Complete "Paint the hall"' }).isChecked()).toBe(false);
    expect((await taskOf(page, parent.id))!.completedAt).toBeNull();

    // the steps one by one; the last one offers the task
    for (const s of [...steps.map((x) => x.title), 'Clean the brushes']) {
      await stepList.getByRole('checkbox', { name: `Complete "${s}"` }).click();
      await eventually(() => page.getByText(`Completed "${s}"`).count()).toBe(1);
    }
    const offer = page.getByRole('button', { name: 'Complete "Paint the hall"', exact: true }).and(page.locator('.toast button'));
    await offer.waitFor();
    await shot(page, `offer-${label}`);
    await offer.click();
    await eventually(async () => (await taskOf(page, parent.id))!.completedAt).not.toBeNull();
    expect(await taskOf(page, parent.id)).toMatchObject({ subtaskCount: 3, subtasksDone: 3 });
  });

  it.each(SIZES)('a task with steps becomes a topic (one step at a time), and Undo brings it back (%s)', async (label, size) => {
    const page = await newPage(size);
    await signIn(page, suite.url, `promote-${label}@example.test`);
    const { parent, steps } = await withSteps(page, 'Plan the trip', ['Book the train', 'Book the hotel']);
    await page.goto(`${suite.url}/tasks`);
    const row = page.locator(`[data-task-id="${parent.id}"]`);
    await row.getByRole('button', { name: 'Actions for "Plan the trip"' }).click();
    await page.getByRole('menuitem', { name: 'Make it a topic, one step at a time' }).click();
    await page.getByText('"Plan the trip" is now a topic with 2 tasks').waitFor();
    await eventually(() => row.count()).toBe(0);
    const topics = ((await (await page.request.get('/api/topics')).json()) as { topics: { id: string; title: string; sequential: boolean }[] }).topics;
    expect(topics).toEqual([expect.objectContaining({ title: 'Plan the trip', sequential: true })]);
    for (const s of steps) expect(await taskOf(page, s.id)).toMatchObject({ parentId: null, topicId: topics[0]!.id });
    // the steps stand on their own now, the second waiting its turn
    await eventually(() => page.locator(`[data-task-id="${steps[1]!.id}"]`).textContent()).toContain('waiting');
    await shot(page, `promoted-${label}`);

    await page.locator('.toast').getByRole('button', { name: 'Undo' }).click();
    await eventually(async () => (await taskOf(page, parent.id))?.subtaskCount).toBe(2);
    expect(((await (await page.request.get('/api/topics')).json()) as { topics: unknown[] }).topics).toEqual([]);
    await eventually(() => page.getByRole('list', { name: 'Steps of "Plan the trip"' }).getByTestId('task-row').count()).toBe(2);
  });
});
