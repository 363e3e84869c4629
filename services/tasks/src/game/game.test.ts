import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { notificationRequested, type NotificationRequest } from '@tasksvc/proto';
import { createNatsBus, type Bus, type Subscription } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_SERVICES, startSystem, type RunningSystem } from '../../../../tools/system.ts';
import { fileNats, quietLogger, testSystemConfig, until, zoneAtLocalHour } from '../../../../tools/testenv/index.ts';
import { apiClient, serveTestIdentities } from '../../test/support.ts';
import { tasksService } from '../service.ts';
import { localDate } from './domain/dates.ts';

/**
 * The game API end to end: HTTP → gateway → NATS → tasks service → PostgreSQL. Identity comes from
 * the tasks tests' TEST DOUBLE of auth.identity.resolve; achievement notifications are read back
 * from JetStream.
 */

const nats = fileNats();
let system: RunningSystem;
let identity: Subscription;
let observer: Bus;
let api: ReturnType<typeof apiClient>;
const notes: NotificationRequest[] = [];

beforeAll(async () => {
  const config = await testSystemConfig({ PUBLIC_APP_URL: 'https://tasks.example.test' }, { natsUrl: nats.url() });
  system = await startSystem(config, { log: quietLogger(), services: [tasksService, ALL_SERVICES.find((s) => s.name === 'gateway')!] });
  identity = serveTestIdentities(system.bus);
  observer = await createNatsBus({ servers: nats.url(), name: 'observer', log: quietLogger() });
  await observer.consume(notificationRequested, async (m) => void notes.push(m), { durable: 'game-test-observer' });
  api = apiClient(system.url);
});

afterAll(async () => {
  await identity?.stop();
  await observer?.close();
  await system?.stop();
});

const today = () => localDate(new Date(), 'UTC');
const addDays = (d: string, n: number) => new Date(Date.parse(`${d}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);

/** A new user whose local hour is noon: no secret achievement (night_owl, early_bird) adds coins to what a test counts. */
async function middayUser(): Promise<string> {
  const u = randomUUID();
  expect((await api('PUT', '/api/settings/timezone', { as: u, body: { timezone: zoneAtLocalHour(12) } })).status).toBe(200);
  return u;
}

async function createTask(as: string, body: Record<string, unknown>) {
  const res = await api('POST', '/api/tasks', { as, body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.task as { id: string; title: string };
}

describe('daily quest', () => {
  it('selects by tier once per day, re-rolls on POST, and needs a user', async () => {
    const u = randomUUID();
    expect((await api('GET', '/api/daily-quest')).status).toBe(401);
    await createTask(u, { title: 'plain', type: 'ONE_TIME' });
    const overdue = await createTask(u, { title: 'overdue', type: 'ONE_TIME', dueDate: addDays(today(), -2) });
    const first = await api('GET', '/api/daily-quest', { as: u });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ date: today(), tier: 'overdue', completed: false, postponesToday: 0, postponeLimit: 3 });
    expect(first.body.quest).toMatchObject({ id: overdue.id, isDailyQuest: true, dailyQuestDate: today() });
    expect((await api('GET', '/api/daily-quest', { as: u })).body.quest.id).toBe(overdue.id);
    const rolled = await api('POST', '/api/daily-quest', { as: u });
    expect(rolled.status).toBe(200);
    expect(rolled.body.quest.title).toBe('plain');
    expect((await api('GET', `/api/tasks/${overdue.id}`, { as: u })).body.task.isDailyQuest).toBe(false);
  });

  it('re-rolls go through every candidate before coming back to one re-rolled away today (issue 55)', async () => {
    const u = randomUUID();
    for (const d of [-3, -2, -1]) await createTask(u, { title: `overdue ${d}`, type: 'ONE_TIME', dueDate: addDays(today(), d) });
    const seen = [(await api('GET', '/api/daily-quest', { as: u })).body.quest.title];
    for (let i = 0; i < 2; i++) seen.push((await api('POST', '/api/daily-quest', { as: u })).body.quest.title);
    expect(seen).toEqual(['overdue -3', 'overdue -2', 'overdue -1']);
    // all others re-rolled away: one of them comes back rather than no quest
    expect((await api('POST', '/api/daily-quest', { as: u })).body.quest.title).toBe('overdue -3');
  });

  it('postponing the quest keeps the day\'s re-roll history: neither the new pick nor a later re-roll swings back (issue 55)', async () => {
    const u = randomUUID();
    for (const d of [-4, -3, -2, -1]) await createTask(u, { title: `overdue ${d}`, type: 'ONE_TIME', dueDate: addDays(today(), d) });
    expect((await api('GET', '/api/daily-quest', { as: u })).body.quest.title).toBe('overdue -4');
    expect((await api('POST', '/api/daily-quest', { as: u })).body.quest.title).toBe('overdue -3');
    const p = await api('POST', '/api/daily-quest/postpone', { as: u });
    expect([p.status, p.body.quest.title]).toEqual([200, 'overdue -2']);
    expect((await api('POST', '/api/daily-quest', { as: u })).body.quest.title).toBe('overdue -1');
    const { rows } = await system.pool.query('SELECT t.title FROM tasks.daily_quests q, unnest(q.rerolled_away) a JOIN tasks.tasks t ON t.id = a WHERE q.user_id = $1 ORDER BY t.title', [u]);
    expect(rows.map((r) => r.title)).toEqual(['overdue -2', 'overdue -4']);
  });

  it('postpones to tomorrow up to the limit (429 LIMIT_REACHED), and restores', async () => {
    const u = randomUUID();
    expect((await api('PUT', '/api/settings/quest', { as: u, body: { postponeLimit: 9 } })).body.issues[0].path).toBe('body.postponeLimit');
    expect((await api('PUT', '/api/settings/quest', { as: u, body: { postponeLimit: 1 } })).body).toEqual({ postponeLimit: 1, energyLevel: null });
    const a = await createTask(u, { title: 'a', type: 'ONE_TIME', dueDate: addDays(today(), -1) });
    await createTask(u, { title: 'b', type: 'ONE_TIME' });
    expect((await api('GET', '/api/daily-quest', { as: u })).body.quest.id).toBe(a.id);
    const p = await api('POST', '/api/daily-quest/postpone', { as: u });
    expect(p.status).toBe(200);
    expect(p.body).toMatchObject({ postponesToday: 1, quest: { title: 'b' } });
    const moved = (await api('GET', `/api/tasks/${a.id}`, { as: u })).body.task;
    expect(moved).toMatchObject({ dueDate: addDays(today(), 1), snoozedUntil: addDays(today(), 1), postponeCount: 1 });
    const over = await api('POST', '/api/daily-quest/postpone', { as: u });
    expect(over.status).toBe(429);
    expect(over.body.code).toBe('LIMIT_REACHED');
    const r = await api('POST', '/api/daily-quest/restore', { as: u });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ postponesToday: 0, quest: { id: a.id, dueDate: addDays(today(), -1), snoozedUntil: null, postponeCount: 0 } });
    expect((await api('POST', '/api/daily-quest/restore', { as: u })).status).toBe(404);
  });

  it('postponing the quest never brings its deadline forward and leaves an undated task undated', async () => {
    const u = randomUUID();
    const later = await createTask(u, { title: 'due in three days', type: 'ONE_TIME', dueDate: addDays(today(), 3) });
    expect((await api('GET', '/api/daily-quest', { as: u })).body.quest.id).toBe(later.id);
    expect((await api('POST', '/api/daily-quest/postpone', { as: u })).status).toBe(200);
    expect((await api('GET', `/api/tasks/${later.id}`, { as: u })).body.task).toMatchObject({ dueDate: addDays(today(), 3), snoozedUntil: addDays(today(), 1) });
    const undated = await createTask(u, { title: 'undated', type: 'ONE_TIME' });
    expect((await api('POST', '/api/daily-quest', { as: u })).body.quest.id).toBe(undated.id);
    expect((await api('POST', '/api/daily-quest/postpone', { as: u })).status).toBe(200);
    expect((await api('GET', `/api/tasks/${undated.id}`, { as: u })).body.task).toMatchObject({ dueDate: null, snoozedUntil: addDays(today(), 1) });
  });
});

describe('completion side effects', () => {
  it('counts the streak and quest streak, unlocks achievements once with their coins, and undo takes back exactly the task coins', async () => {
    const u = await middayUser();
    const t = await createTask(u, { title: 'quest me', type: 'ONE_TIME', coinValue: 5 });
    expect((await api('GET', '/api/daily-quest', { as: u })).body.quest.id).toBe(t.id);
    const done = await api('POST', `/api/tasks/${t.id}/complete`, { as: u });
    expect(done.status).toBe(200);
    const stats = (await api('GET', '/api/stats', { as: u })).body;
    // 5 task coins + tasks_1 (10) + first_quest (10)
    expect(stats).toMatchObject({ coins: 25, level: 1, streak: { current: 1, max: 1 }, questStreak: { current: 1 }, tasksCompleted: 1, questsCompleted: 1 });
    const ach = (await api('GET', '/api/achievements', { as: u })).body;
    expect(ach.total).toBe(31);
    const unlocked = ach.achievements.filter((a: { unlocked: boolean }) => a.unlocked).map((a: { key: string }) => a.key);
    expect(unlocked).toEqual(expect.arrayContaining(['tasks_1', 'first_quest']));
    expect(ach.achievements.find((a: { key: string }) => a.key === 'double_shift')).toMatchObject({ title: '???', unlocked: false, secret: true });
    expect((await api('GET', '/api/daily-quest', { as: u })).body.completed).toBe(true);

    const undo = await api('DELETE', `/api/tasks/${t.id}/complete`, { as: u });
    expect(undo.status).toBe(200);
    // the achievement coins stay (unlocks are permanent); the task's 5 go
    expect((await api('GET', '/api/stats', { as: u })).body.coins).toBe(20);
    expect((await api('GET', '/api/daily-quest', { as: u })).body.completed).toBe(false);
    // completing again does not unlock (or pay) tasks_1 twice
    await api('POST', `/api/tasks/${t.id}/complete`, { as: u });
    expect((await api('GET', '/api/stats', { as: u })).body.coins).toBe(25);
    const achNotes = await until(() => {
      const mine = notes.filter((n) => n.userId === u && n.tag === 'achievement');
      return mine.length >= 2 ? mine : undefined;
    }, 'achievement notifications');
    expect(achNotes.map((n) => n.dedupeKey).sort()).toEqual([`achievement:${u}:first_quest`, `achievement:${u}:tasks_1`]);
  });
});

describe('levels come from what was earned (issue 55, bug 5)', () => {
  it('spending coins on a wish never lowers the level; undoing a completion takes its coins back from both', async () => {
    const u = await middayUser();
    for (let i = 0; i < 4; i++) await api('POST', `/api/tasks/${(await createTask(u, { title: `ten ${i}`, coinValue: 10 })).id}/complete`, { as: u });
    const before = (await api('GET', '/api/stats', { as: u })).body;
    // 4 × 10 task coins + tasks_1 (10)
    expect(before).toMatchObject({ coins: 50, coinsEarned: 50, level: 2, levelStart: 50, nextLevelAt: 150 });
    const wish = await api('POST', '/api/wishlist', { as: u, body: { title: 'Cinema', price: 50 } });
    expect(wish.status).toBe(201);
    expect((await api('POST', `/api/wishlist/${wish.body.item.id}/buy`, { as: u, body: {} })).status).toBe(200);
    // the balance pays the wish (and wishlist_1 pays 10); what was earned only grows
    expect((await api('GET', '/api/stats', { as: u })).body).toMatchObject({ coins: 10, coinsEarned: 60, level: 2, levelStart: 50, nextLevelAt: 150 });
    const last = await createTask(u, { title: 'five', coinValue: 5 });
    await api('POST', `/api/tasks/${last.id}/complete`, { as: u });
    expect((await api('GET', '/api/stats', { as: u })).body).toMatchObject({ coins: 15, coinsEarned: 65 });
    await api('DELETE', `/api/tasks/${last.id}/complete`, { as: u });
    expect((await api('GET', '/api/stats', { as: u })).body).toMatchObject({ coins: 10, coinsEarned: 60, level: 2 });
  });

  it('the migration gives everyone what they earned, so nobody drops a level', async () => {
    const migration = readFileSync(new URL('../../migrations/0107_coins_earned.sql', import.meta.url), 'utf8');
    const backfill = migration.split('--> statement-breakpoint')[1]!;
    // a user who earned 70 (5 × 10, tasks_1, wishlist_1) and spent 50 before the column existed
    const spender = await middayUser();
    for (let i = 0; i < 5; i++) await api('POST', `/api/tasks/${(await createTask(spender, { title: `t ${i}`, coinValue: 10 })).id}/complete`, { as: spender });
    const wish = await api('POST', '/api/wishlist', { as: spender, body: { title: 'Book', price: 50 } });
    await api('POST', `/api/wishlist/${wish.body.item.id}/buy`, { as: spender, body: {} });
    await system.pool.query(`UPDATE tasks.profiles SET coins_earned = 0 WHERE user_id = $1`, [spender]);
    await system.pool.query(backfill);
    expect((await api('GET', '/api/stats', { as: spender })).body).toMatchObject({ coins: 20, coinsEarned: 70, level: 2 });
  });
});

describe('settings, review and stats', () => {
  it('stores reminder times and rejects bad ones naming the field', async () => {
    const u = randomUUID();
    const bad = await api('PUT', '/api/settings/notifications', { as: u, body: { dueToday: { time: '25:00' } } });
    expect(bad.status).toBe(400);
    expect(bad.body.issues[0].path).toBe('body.dueToday.time');
    const ok = await api('PUT', '/api/settings/notifications', { as: u, body: { enabled: true, time: '07:30', dueToday: { enabled: true, time: '08:15' } } });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ enabled: true, time: '07:30', streakReminderTime: '20:00', weeklyReviewTime: '18:00', dueToday: { enabled: true, time: '08:15' }, overdue: { enabled: false } });
    expect((await api('GET', '/api/settings/notifications', { as: u })).body).toEqual(ok.body);
  });
  it('the streak reminder and the weekly review have their own switches; the migration gives both the quest reminder switch (issue 55)', async () => {
    const u = randomUUID();
    const on = await api('PUT', '/api/settings/notifications', { as: u, body: { enabled: true, weeklyReviewEnabled: true } });
    expect(on.body).toMatchObject({ enabled: true, streakReminderEnabled: false, weeklyReviewEnabled: true });
    const bad = await api('PUT', '/api/settings/notifications', { as: u, body: { streakReminderEnabled: 'yes' } });
    expect([bad.status, bad.body.issues[0].path]).toEqual([400, 'body.streakReminderEnabled']);
    expect((await api('GET', '/api/settings/profile', { as: u })).body.profile).toMatchObject({ notificationEnabled: true, streakReminderEnabled: false, weeklyReviewEnabled: true });
    // before the migration: the quest reminder on for u, off for another; neither column set yet
    const off = randomUUID();
    await api('PUT', '/api/settings/notifications', { as: off, body: { enabled: false } });
    await system.pool.query('UPDATE tasks.profiles SET streak_reminder_enabled = false, weekly_review_enabled = false WHERE user_id = ANY($1)', [[u, off]]);
    const migration = readFileSync(new URL('../../migrations/0113_reminder_switches.sql', import.meta.url), 'utf8');
    await system.pool.query(migration.split('--> statement-breakpoint').find((s) => s.includes('UPDATE'))!);
    expect((await api('GET', '/api/settings/notifications', { as: u })).body).toMatchObject({ enabled: true, streakReminderEnabled: true, weeklyReviewEnabled: true });
    expect((await api('GET', '/api/settings/notifications', { as: off })).body).toMatchObject({ enabled: false, streakReminderEnabled: false, weeklyReviewEnabled: false });
  });

  it('reviews the Monday–Sunday week', async () => {
    const u = randomUUID();
    await createTask(u, { title: 'x', type: 'ONE_TIME' });
    const r = await api('GET', '/api/review/weekly?date=2026-11-18', { as: u });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ weekStart: '2026-11-16', weekEnd: '2026-11-22', completions: 0, topTopics: [] });
    expect((await api('GET', '/api/review/weekly?date=yesterday', { as: u })).body.issues[0].path).toBe('query.date');
    const s = await api('GET', '/api/stats', { as: u });
    expect(s.body.completionsByDay).toHaveLength(30);
    expect(s.body).toMatchObject({ coins: 0, coinsEarned: 0, level: 1, levelStart: 0, nextLevelAt: 50 });
  });
});
