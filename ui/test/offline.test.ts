import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { chromiumSuite, createTask, eventually, hasChromium, signIn, SIZES } from './support.ts';

/**
 * Issue 55, offline and flaky networks, in Chromium against the whole system (context.setOffline
 * at each step; screenshots under test-results/screenshots/offline-*): reads from the cache kept in
 * IndexedDB, writes queued (also across a reload offline) and sent once each with their
 * Idempotency-Key, the conflict rule, and a connection that drops in the middle of sending.
 */

const suite = chromiumSuite('offline');

const GROCERIES = ['Apples', 'Bread', 'Candles', 'Dough', 'Eggs', 'Flour', 'Grapes', 'Honey', 'Ink', 'Jam'].map((w) => `Buy ${w}`);

interface ServerTask {
  id: string;
  title: string;
  priority: string;
  completedAt: string | null;
  coinValue: number;
}

async function serverTasks(page: Page): Promise<ServerTask[]> {
  const res = await page.request.get('/api/tasks?limit=500');
  expect(res.status()).toBe(200);
  return ((await res.json()) as { tasks: ServerTask[] }).tasks;
}

/** Coins earned for completions alone: what was earned, less what achievements gave. */
async function completionCoins(page: Page): Promise<{ coins: number; completed: number }> {
  const stats = (await (await page.request.get('/api/stats')).json()) as { coinsEarned: number; tasksCompleted: number };
  const { achievements } = (await (await page.request.get('/api/achievements')).json()) as { achievements: { unlocked: boolean; reward: number }[] };
  const rewards = achievements.filter((a) => a.unlocked).reduce((s, a) => s + a.reward, 0);
  return { coins: stats.coinsEarned - rewards, completed: stats.tasksCompleted };
}

async function quickAdd(page: Page, title: string): Promise<void> {
  await page.getByLabel('Quick add a task').fill(title);
  await page.keyboard.press('Enter');
  await page.locator('.toast').filter({ hasText: `Added "${title}"` }).waitFor();
}

async function menu(page: Page, title: string, item: string): Promise<void> {
  await page.getByRole('button', { name: `Actions for "${title}"` }).click();
  await page.getByRole('menuitem', { name: item, exact: true }).click();
}

const row = (page: Page, title: string) => page.getByTestId('task-row').filter({ hasText: title });

describe.skipIf(!hasChromium)('offline in Chromium', () => {
  it.each(SIZES)('20 changes offline survive a reload offline and arrive exactly once when back online (%s)', async (label, size) => {
    const page = await suite.newPage(size, { serviceWorkers: 'allow' });
    await signIn(page, suite.url, `queue-${label}@example.test`);
    const seeded: Record<string, string> = {};
    for (const t of ['Complete 1', 'Complete 2', 'Complete 3', 'Complete 4', 'Raise 1', 'Raise 2', 'Raise 3', 'Drop 1', 'Drop 2']) seeded[t] = await createTask(page, { title: t, coinValue: 7 });
    // one completion first, so the first-task achievement is not part of what is measured
    await page.request.post(`/api/tasks/${await createTask(page, { title: 'Warm-up' })}/complete`, { data: {} });
    const before = await completionCoins(page);
    const nav = page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Tasks' }).click();
    await row(page, 'Drop 2').waitFor();
    // The worker has this build's files (a reload offline gets the app shell).
    await page.waitForFunction(async () => navigator.serviceWorker.controller !== null && (await caches.keys()).some((k) => k.startsWith('app-')));

    await page.context().setOffline(true);
    await page.getByTestId('offline-banner').waitFor();
    for (const g of GROCERIES) await quickAdd(page, g); // 10 creates
    for (const t of ['Complete 1', 'Complete 2', 'Complete 3', 'Complete 4', 'Buy Jam']) {
      await page.getByRole('checkbox', { name: `Complete "${t}"` }).click(); // 5 completions, one of a task made offline
      await eventually(() => row(page, t).count()).toBe(0);
    }
    for (const t of ['Raise 1', 'Raise 2', 'Raise 3']) {
      await menu(page, t, 'High'); // 3 edits
      await eventually(() => row(page, t).locator('.badge.high').count()).toBe(1);
    }
    for (const t of ['Drop 1', 'Drop 2']) {
      await menu(page, t, 'Delete'); // 2 deletions: sent once their Undo toast is dismissed
      await page.locator('.toast').filter({ hasText: `Deleted "${t}"` }).getByRole('button', { name: 'Dismiss' }).click();
    }
    await eventually(() => page.getByTestId('pending-changes').textContent()).toContain('20 changes waiting');
    await suite.shot(page, 'queued');

    // A reload offline: the app opens with the last data and the queue, and says it is offline.
    await page.reload();
    await page.getByTestId('offline-banner').waitFor();
    await eventually(() => page.getByTestId('pending-changes').textContent()).toContain('20 changes waiting');
    await row(page, 'Buy Apples').waitFor();
    await row(page, 'Raise 1').locator('.badge.high').waitFor();
    expect(await row(page, 'Complete 1').count()).toBe(0);
    expect(await row(page, 'Drop 1').count()).toBe(0);
    expect(await page.getByText('Loading…').count()).toBe(0);
    await suite.shot(page, 'reloaded-offline');

    await page.context().setOffline(false);
    await eventually(() => page.getByTestId('pending-changes').count()).toBe(0);
    await eventually(() => page.getByTestId('offline-banner').count()).toBe(0);
    expect(await page.getByTestId('sync-notices').count()).toBe(0);
    await suite.shot(page, 'sent');

    const tasks = await serverTasks(page);
    for (const g of GROCERIES) expect(tasks.filter((t) => t.title === g), g).toHaveLength(1);
    for (const t of ['Complete 1', 'Complete 2', 'Complete 3', 'Complete 4', 'Buy Jam']) expect(tasks.find((x) => x.title === t)?.completedAt, t).toBeTruthy();
    for (const t of ['Raise 1', 'Raise 2', 'Raise 3']) expect(tasks.find((x) => x.title === t)?.priority, t).toBe('HIGH');
    for (const t of ['Drop 1', 'Drop 2']) expect((await page.request.get(`/api/tasks/${seeded[t]}`)).status(), t).toBe(404);
    expect(tasks.filter((t) => !t.completedAt).map((t) => t.title).sort()).toEqual([...GROCERIES.slice(0, 9), 'Raise 1', 'Raise 2', 'Raise 3'].sort());
    // coins paid once per completion
    const after = await completionCoins(page);
    const jam = tasks.find((t) => t.title === 'Buy Jam')!;
    expect(after.completed - before.completed).toBe(5);
    expect(after.coins - before.coins).toBe(4 * 7 + jam.coinValue);
    // the list shows the server's tasks again (no leftovers from the queue)
    await eventually(() => row(page, 'Buy Apples').count()).toBe(1);
    expect(await page.locator('[data-task-id^="local-"]').count()).toBe(0);
  });

  it.each(SIZES)('the connection dropping in the middle of sending: each change still counts once (%s)', async (label, size) => {
    const page = await suite.newPage(size);
    await signIn(page, suite.url, `drop-${label}@example.test`);
    const ids: string[] = [];
    for (let i = 1; i <= 3; i++) ids.push(await createTask(page, { title: `Pay ${i}`, coinValue: 9 }));
    await page.request.post(`/api/tasks/${await createTask(page, { title: 'Warm-up' })}/complete`, { data: {} });
    const before = await completionCoins(page);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Tasks' }).click();
    await row(page, 'Pay 3').waitFor();
    await page.context().setOffline(true);
    for (const g of GROCERIES.slice(0, 4)) await quickAdd(page, g);
    for (let i = 1; i <= 3; i++) await page.getByRole('checkbox', { name: `Complete "Pay ${i}"` }).click();
    await eventually(() => page.getByTestId('pending-changes').textContent()).toContain('7 changes waiting');
    // The second completion reaches the server, but its answer is lost as the connection drops.
    let dropped = false;
    await page.route(`**/api/tasks/${ids[1]}/complete`, async (route) => {
      const res = await route.fetch();
      expect(res.status()).toBe(200);
      await page.context().setOffline(true);
      // Going offline can fail the in-flight request in Chromium before the abort gets there;
      // either way the answer is lost, which is the point.
      await route.abort('internetdisconnected').catch((e: Error) => {
        if (!/already handled/.test(e.message)) throw e;
      });
      dropped = true;
    });
    await page.context().setOffline(false);
    await eventually(() => dropped).toBe(true);
    await page.unroute(`**/api/tasks/${ids[1]}/complete`);
    // what was not confirmed is still waiting: the lost one and those after it
    await eventually(() => page.getByTestId('pending-changes').textContent()).toContain('2 changes waiting');
    await suite.shot(page, 'dropped');
    await page.context().setOffline(false);
    await eventually(() => page.getByTestId('pending-changes').count()).toBe(0);
    const tasks = await serverTasks(page);
    for (const g of GROCERIES.slice(0, 4)) expect(tasks.filter((t) => t.title === g), g).toHaveLength(1);
    for (let i = 1; i <= 3; i++) expect(tasks.find((t) => t.title === `Pay ${i}`)?.completedAt).toBeTruthy();
    const after = await completionCoins(page);
    expect(after.completed - before.completed).toBe(3);
    expect(after.coins - before.coins).toBe(27);
    expect(await page.getByTestId('sync-notices').count()).toBe(0);
  });

  it.each(SIZES)('a conflict: a field changed elsewhere meanwhile keeps the other change, and the person is told (%s)', async (label, size) => {
    const page = await suite.newPage(size);
    await signIn(page, suite.url, `conflict-${label}@example.test`);
    const id = await createTask(page, { title: 'Shared plan', priority: 'NORMAL' });
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Tasks' }).click();
    await row(page, 'Shared plan').waitFor();
    await page.context().setOffline(true);
    await menu(page, 'Shared plan', 'Someday'); // priority, queued
    await menu(page, 'Shared plan', 'Tomorrow'); // due date, queued
    await eventually(() => page.getByTestId('pending-changes').textContent()).toContain('2 changes waiting');
    // Meanwhile another device raises the priority.
    expect((await page.request.patch(`/api/tasks/${id}`, { data: { priority: 'HIGH' } })).status()).toBe(200);
    await page.context().setOffline(false);
    await eventually(() => page.getByTestId('pending-changes').count()).toBe(0);
    const notice = page.getByTestId('sync-notices');
    await notice.waitFor();
    expect(await notice.textContent()).toContain('"Shared plan" was changed elsewhere while you were offline: its priority kept the other change');
    await suite.shot(page, 'conflict');
    const task = ((await (await page.request.get(`/api/tasks/${id}`)).json()) as { task: { priority: string; dueDate: string | null } }).task;
    // the other device's priority stays; the due date, changed only here, is applied
    expect(task.priority).toBe('HIGH');
    expect(task.dueDate).not.toBeNull();
    await notice.getByRole('button', { name: 'OK' }).click();
    await eventually(() => notice.count()).toBe(0);
  });
});
