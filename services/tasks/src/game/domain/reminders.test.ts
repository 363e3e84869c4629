import { describe, expect, it } from 'vitest';
import { parseClock } from './dates.ts';
import {
  dailyQuestDraft,
  dueTodayDraft,
  morningBriefingDraft,
  overdueDraft,
  recurringDueDrafts,
  streakDraft,
  weeklyReviewDraft,
} from './messages.ts';
import { cronBucketStart } from '@tasksvc/proto';
import { isDueInWindow, localWindow } from './reminders.ts';

const U = '00000000-0000-4000-8000-000000000001';
const due = (time: string, bucketIso: string, tz: string) => isDueInWindow(parseClock(time), localWindow(new Date(bucketIso), tz));

describe('reminder timing: local time inside the 5-minute bucket', () => {
  it('aligns buckets to 5 minutes', () => {
    expect(cronBucketStart(new Date('2026-05-10T08:04:59.999Z')).toISOString()).toBe('2026-05-10T08:00:00.000Z');
    expect(cronBucketStart(new Date('2026-05-10T08:05:00Z')).toISOString()).toBe('2026-05-10T08:05:00.000Z');
  });
  it('fires a user at their local time in their zone, in exactly one bucket of the day', () => {
    // 08:00 in Berlin (CEST, UTC+2) is 06:00Z
    expect(due('08:00', '2026-05-10T06:00:00Z', 'Europe/Berlin')).toBe(true);
    expect(due('08:04', '2026-05-10T06:00:00Z', 'Europe/Berlin')).toBe(true);
    expect(due('08:05', '2026-05-10T06:00:00Z', 'Europe/Berlin')).toBe(false);
    let hits = 0;
    for (let t = Date.parse('2026-05-09T22:00:00Z'); t < Date.parse('2026-05-10T22:00:00Z'); t += 300_000) if (due('08:03', new Date(t).toISOString(), 'Europe/Berlin')) hits++;
    expect(hits).toBe(1);
  });
  it('handles UTC+14 and UTC−11 on the right local date', () => {
    const k = localWindow(new Date('2026-06-30T18:00:00Z'), 'Pacific/Kiritimati');
    expect(k).toMatchObject({ date: '2026-07-01', from: 8 * 60, to: 8 * 60 + 5, weekday: 3 });
    const p = localWindow(new Date('2026-06-30T18:00:00Z'), 'Pacific/Pago_Pago');
    expect(p).toMatchObject({ date: '2026-06-30', from: 7 * 60, to: 7 * 60 + 5 });
  });
  it('covers a bucket ending at local midnight', () => {
    const w = localWindow(new Date('2026-05-10T21:55:00Z'), 'Europe/Berlin');
    expect(w).toMatchObject({ date: '2026-05-10', from: 23 * 60 + 55, to: 24 * 60 });
  });
  it('fires a reminder set inside the spring-forward gap once, at the jump', () => {
    // Europe/Berlin 2026-03-29: 02:00 CET → 03:00 CEST at 01:00Z. 02:30 does not exist that day.
    const w = localWindow(new Date('2026-03-29T00:55:00Z'), 'Europe/Berlin');
    expect(w).toMatchObject({ date: '2026-03-29', from: 60 + 55, to: 3 * 60 });
    let hits = 0;
    for (let t = Date.parse('2026-03-28T23:00:00Z'); t < Date.parse('2026-03-29T22:00:00Z'); t += 300_000) if (due('02:30', new Date(t).toISOString(), 'Europe/Berlin')) hits++;
    expect(hits).toBe(1);
  });
  it('matches a time in the repeated fall-back hour in both passes (the per-day sent key dedupes)', () => {
    // Europe/Berlin 2026-10-25: 03:00 CEST → 02:00 CET at 01:00Z; 02:30 happens at 00:30Z and 01:30Z.
    expect(due('02:30', '2026-10-25T00:30:00Z', 'Europe/Berlin')).toBe(true);
    expect(due('02:30', '2026-10-25T01:30:00Z', 'Europe/Berlin')).toBe(true);
    // The bucket that crosses the change stays 5 minutes wide instead of wrapping the day.
    const w = localWindow(new Date('2026-10-25T00:55:00Z'), 'Europe/Berlin');
    expect(w).toMatchObject({ from: 2 * 60 + 55, to: 3 * 60 });
  });
});

describe('notification drafts', () => {
  it('due-today and overdue list at most 10 tasks and send nothing when empty', () => {
    const titles = Array.from({ length: 12 }, (_, i) => `T${i}`);
    expect(dueTodayDraft(U, '2026-05-10', [], 0)).toBeNull();
    expect(overdueDraft(U, '2026-05-10', [], 0)).toBeNull();
    const d = dueTodayDraft(U, '2026-05-10', titles, 12)!;
    expect(d).toMatchObject({ tag: 'due-today', title: '12 tasks due today', dedupeKey: `due-today:${U}:2026-05-10` });
    expect(d.body.split('\n')).toHaveLength(11);
    expect(d.body).toContain('…and 2 more');
    expect(overdueDraft(U, '2026-05-10', ['a'], 1)).toMatchObject({ tag: 'overdue', title: '1 overdue task' });
  });
  it('recurring-due: one per task up to 3, then one summary', () => {
    const t = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `id${i}`, title: `R${i}` }));
    expect(recurringDueDrafts(U, '2026-05-10', t(0))).toEqual([]);
    const three = recurringDueDrafts(U, '2026-05-10', t(3));
    expect(three.map((d) => d.dedupeKey)).toEqual([0, 1, 2].map((i) => `recurring-due:${U}:2026-05-10:id${i}`));
    const four = recurringDueDrafts(U, '2026-05-10', t(4));
    expect(four).toHaveLength(1);
    expect(four[0]).toMatchObject({ tag: 'recurring-due', title: '4 recurring tasks due today' });
  });
  it('clips long task titles to the notifier limits instead of failing the page', () => {
    const long = 'x'.repeat(255);
    const [single] = recurringDueDrafts(U, '2026-05-10', [{ id: 'a', title: long }]);
    expect(single!.title.length).toBe(200);
    expect(single!.title.endsWith('…')).toBe(true);
    const many = dueTodayDraft(U, '2026-05-10', Array.from({ length: 10 }, () => long), 10)!;
    expect(many.body.length).toBeLessThanOrEqual(4000);
  });
  it('daily-quest only with a quest; streak always names the streak', () => {
    expect(dailyQuestDraft(U, '2026-05-10', null)).toBeNull();
    expect(dailyQuestDraft(U, '2026-05-10', 'Water plants')).toMatchObject({ tag: 'daily-quest', body: 'Water plants' });
    expect(streakDraft(U, '2026-05-10', 4)).toMatchObject({ tag: 'streak', title: 'Keep your 4 days streak', dedupeKey: `streak:${U}:2026-05-10` });
  });
  it('weekly review summarises the week keyed by its Monday', () => {
    const d = weeklyReviewDraft(U, {
      weekStart: '2026-05-04',
      weekEnd: '2026-05-10',
      completions: 9,
      previousWeekCompletions: 6,
      postponements: 2,
      coinsEarned: 14,
      streakCurrent: 5,
      streakMax: 8,
      tasksCreated: 4,
      topTopics: [{ topicId: 'x', title: 'Home', completions: 5 }],
    });
    expect(d).toMatchObject({ tag: 'weekly-review', dedupeKey: `weekly-review:${U}:2026-05-04` });
    expect(d.body).toContain('9 tasks completed (+3 vs last week)');
    expect(d.body).toContain('Top topics: Home');
  });
  it('morning briefing is sent on an empty day and caps achievements at 5', () => {
    const empty = morningBriefingDraft(U, '2026-05-10', { questTitle: null, questDone: false, dueToday: [], dueTodayTotal: 0, overdueTotal: 0, streak: 0, recentAchievements: [] });
    expect(empty).toMatchObject({ tag: 'morning-briefing', body: 'No quest today.\nNothing due today.' });
    const full = morningBriefingDraft(U, '2026-05-10', { questTitle: 'Q', questDone: false, dueToday: ['a'], dueTodayTotal: 1, overdueTotal: 2, streak: 3, recentAchievements: ['1', '2', '3', '4', '5', '6'] });
    expect(full.body).toContain('Quest: Q');
    expect(full.body).toContain('New achievements: 1, 2, 3, 4, 5');
    expect(full.body).not.toContain('6');
  });
  it('morning briefing after the quest was done says so, not "No quest today."', () => {
    const done = morningBriefingDraft(U, '2026-05-10', { questTitle: 'Call mum', questDone: true, dueToday: [], dueTodayTotal: 0, overdueTotal: 0, streak: 1, recentAchievements: [] });
    expect(done.body.split('\n')[0]).toBe("Today's quest is done: Call mum");
    expect(done.body).not.toContain('No quest today.');
  });
});
