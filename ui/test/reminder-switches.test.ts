import { describe, expect, it } from 'vitest';
import { chromiumSuite, hasChromium, signIn, SIZES } from './support.ts';

/**
 * Issue 55, bug 11: the streak reminder and the weekly review have switches of their own, next to
 * the daily quest reminder's, each with a plain sentence; switching one changes only it. Along the
 * real click path at phone and desktop sizes. Screenshots: reminder-switches-*.
 */

const suite = chromiumSuite('reminder-switches', { locale: 'en-GB' });
const { newPage, shot } = suite;

describe.skipIf(!hasChromium)('streak reminder and weekly review switches (Chromium)', () => {
  it.each(SIZES)('each switches on and off alone, is kept, and warns without a channel (%s)', async (label, size) => {
    const page = await newPage(size);
    await signIn(page, suite.url, `reminder-switches-${label}@example.test`);
    await page.goto(`${suite.url}/settings/notifications`);
    const reminders = page.getByTestId('reminders');
    const quest = reminders.getByRole('checkbox', { name: 'Daily quest reminder' });
    const streak = reminders.getByRole('checkbox', { name: 'Streak reminder' });
    const review = reminders.getByRole('checkbox', { name: 'Weekly review' });
    await streak.waitFor();
    expect([await quest.isChecked(), await streak.isChecked(), await review.isChecked()]).toEqual([false, false, false]);
    // each says in a sentence when it comes
    expect(await reminders.getByText('Sent only on days your streak would end because nothing is done yet').isVisible()).toBe(true);
    expect(await reminders.getByText('A look back at your week, every Sunday').isVisible()).toBe(true);
    expect(await reminders.getByLabel('Streak reminder time').inputValue()).toBe('20:00');

    const settings = async () => (await (await page.request.get('/api/settings/notifications')).json()) as Record<string, unknown>;
    await streak.check();
    await expect.poll(async () => (await settings()).streakReminderEnabled).toBe(true);
    expect(await settings()).toMatchObject({ enabled: false, weeklyReviewEnabled: false });
    // on alone it still reaches nobody without a channel: the warning says so
    await page.getByTestId('no-channel-warning').waitFor();
    await shot(page, `streak-on-${label}`);

    await review.check();
    await expect.poll(async () => (await settings()).weeklyReviewEnabled).toBe(true);
    await streak.uncheck();
    await expect.poll(async () => (await settings()).streakReminderEnabled).toBe(false);
    expect(await settings()).toMatchObject({ enabled: false, weeklyReviewEnabled: true });

    await page.reload();
    await review.waitFor();
    expect([await quest.isChecked(), await streak.isChecked(), await review.isChecked()]).toEqual([false, false, true]);
    // the switch and its time share a row: side by side at either size, nothing cut off
    const row = await review.evaluate((el) => {
      const li = el.closest('li')!.getBoundingClientRect();
      return { right: li.right, page: document.documentElement.clientWidth };
    });
    expect(row.right).toBeLessThanOrEqual(row.page);
    await shot(page, `review-on-${label}`);
  });
});
