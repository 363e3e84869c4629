import { randomUUID } from 'node:crypto';
import { createPool, type Pool } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_SERVICES, startSystem, type RunningSystem } from '../../../../tools/system.ts';
import { quietLogger, testSystemConfig, zoneAtLocalHour } from '../../../../tools/testenv/index.ts';
import { apiClient, serveTestIdentities } from '../../test/support.ts';
import { tasksService } from '../service.ts';
import type { Subscription } from '@tasksvc/runtime';
import { addDays, localDate } from './domain/dates.ts';

/**
 * Game rules that once had loopholes, and the features around coins, energy and vacations, through
 * the HTTP API: gateway → in-process bus → tasks service → PostgreSQL. Identity is the tasks tests'
 * test double of auth.identity.resolve; the database is read and set directly where a rule depends on
 * the past (a streak from last week).
 */

let system: RunningSystem;
let identity: Subscription;
let api: ReturnType<typeof apiClient>;
let db: Pool;

beforeAll(async () => {
  const config = await testSystemConfig({ PUBLIC_APP_URL: 'https://tasks.example.test' });
  system = await startSystem(config, { log: quietLogger(), services: [tasksService, ALL_SERVICES.find((s) => s.name === 'gateway')!] });
  identity = serveTestIdentities(system.bus);
  api = apiClient(system.url);
  db = createPool(config.DATABASE_URL, quietLogger(), { max: 2 });
});

afterAll(async () => {
  await identity?.stop();
  await db?.end();
  await system?.stop();
});

const today = () => localDate(new Date(), 'UTC');

async function createTask(as: string, body: Record<string, unknown>) {
  const res = await api('POST', '/api/tasks', { as, body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.task as { id: string; title: string; dueDate: string | null };
}

describe('game rules without loopholes', () => {
  it('holds one daily postpone limit across the task route and the quest route (429 LIMIT_REACHED)', async () => {
    const u = randomUUID();
    expect((await api('PUT', '/api/settings/quest', { as: u, body: { postponeLimit: 3 } })).status).toBe(200);
    const tasks = await Promise.all(['a', 'b', 'c', 'd'].map((t) => createTask(u, { title: t, type: 'ONE_TIME', dueDate: today() })));
    // Concurrent postpones through the task route cannot slip past the limit.
    const results = await Promise.all(tasks.slice(0, 3).concat(tasks[0]!).map((t) => api('POST', `/api/tasks/${t.id}/postpone`, { as: u, body: {} })));
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 429]);
    expect(results.find((r) => r.status === 429)!.body.code).toBe('LIMIT_REACHED');
    // The quest route sees the same count.
    const quest = await api('GET', '/api/daily-quest', { as: u });
    expect(quest.body.postponesToday).toBe(3);
    expect((await api('POST', '/api/daily-quest/postpone', { as: u })).status).toBe(429);
    const { rows } = await db.query<{ n: number }>('SELECT sum(postpone_count)::int AS n FROM tasks.tasks WHERE user_id = $1', [u]);
    expect(rows[0]!.n).toBe(3);
  });

  it('counts the task route against the quest limit too, and a restore only undoes a quest postpone', async () => {
    const u = randomUUID();
    await api('PUT', '/api/settings/quest', { as: u, body: { postponeLimit: 1 } });
    const a = await createTask(u, { title: 'a', type: 'ONE_TIME', dueDate: today() });
    await createTask(u, { title: 'b', type: 'ONE_TIME' });
    expect((await api('POST', `/api/tasks/${a.id}/postpone`, { as: u, body: {} })).status).toBe(200);
    expect((await api('POST', '/api/daily-quest/postpone', { as: u })).body.code).toBe('LIMIT_REACHED');
    expect((await api('POST', '/api/daily-quest/restore', { as: u })).status).toBe(404);
  });

  it('never brings a due date forward and never dates an undated task', async () => {
    const u = randomUUID();
    const later = await createTask(u, { title: 'due in a week', type: 'ONE_TIME', dueDate: addDays(today(), 7) });
    const undated = await createTask(u, { title: 'someday', type: 'ONE_TIME' });
    const p1 = await api('POST', `/api/tasks/${later.id}/postpone`, { as: u, body: {} });
    expect(p1.body.task).toMatchObject({ dueDate: addDays(today(), 7), snoozedUntil: addDays(today(), 1), postponeCount: 1 });
    const p2 = await api('POST', `/api/tasks/${undated.id}/postpone`, { as: u, body: {} });
    expect(p2.body.task).toMatchObject({ dueDate: null, snoozedUntil: addDays(today(), 1) });
  });

  it('refuses to re-roll a completed quest (409), so a day has one quest', async () => {
    const u = randomUUID();
    await createTask(u, { title: 'one', type: 'ONE_TIME', dueDate: addDays(today(), -1) });
    await createTask(u, { title: 'two', type: 'ONE_TIME' });
    const q = await api('GET', '/api/daily-quest', { as: u });
    expect((await api('POST', `/api/tasks/${q.body.quest.id}/complete`, { as: u, body: {} })).status).toBe(200);
    const reroll = await api('POST', '/api/daily-quest', { as: u });
    expect(reroll.status).toBe(409);
    expect(reroll.body.code).toBe('CONFLICT');
    const after = await api('GET', '/api/daily-quest', { as: u });
    expect(after.body).toMatchObject({ completed: true, quest: { id: q.body.quest.id } });
  });

  it('reports a lapsed streak as 0 in stats and the weekly review alike', async () => {
    const u = randomUUID();
    await createTask(u, { title: 'x', type: 'ONE_TIME' });
    await db.query(
      `UPDATE tasks.profiles SET streak_current = 10, streak_max = 10, streak_last_date = $2, streak_shield_used_month = NULL WHERE user_id = $1`,
      [u, addDays(today(), -6)],
    );
    const stats = await api('GET', '/api/stats', { as: u });
    expect(stats.body.streak).toMatchObject({ current: 0, max: 10 });
    const review = await api('GET', '/api/review/weekly', { as: u });
    expect(review.status).toBe(200);
    expect(review.body).toMatchObject({ streakCurrent: 0, streakMax: 10 });
  });
});

const unlocked = async (as: string) => {
  const r = await api('GET', '/api/achievements', { as });
  return new Set((r.body.achievements as { key: string; unlocked: boolean }[]).filter((a) => a.unlocked).map((a) => a.key));
};

describe('wishlist', () => {
  it('adds, buys (spending coins, never below 0, 409 when short), discards, and unlocks wishlist_1', async () => {
    const u = randomUUID();
    const bad = await api('POST', '/api/wishlist', { as: u, body: { title: '', price: -1 } });
    expect(bad.status).toBe(400);
    expect(bad.body.issues.map((i: { path: string }) => i.path).sort()).toEqual(['body.price', 'body.title']);
    const book = (await api('POST', '/api/wishlist', { as: u, body: { title: 'A book', price: 5 } })).body.item;
    const cake = (await api('POST', '/api/wishlist', { as: u, body: { title: 'Cake', price: 1, url: 'https://shop.example.test/cake' } })).body.item;
    expect(book).toMatchObject({ title: 'A book', price: 5, status: 'OPEN', url: null });
    const short = await api('POST', `/api/wishlist/${book.id}/buy`, { as: u });
    expect(short.status).toBe(409);
    expect(short.body.code).toBe('INSUFFICIENT_COINS');
    // earn 10 coins (one task worth 10), then buy
    const t = await createTask(u, { title: 'earn', type: 'ONE_TIME', coinValue: 10 });
    await api('POST', `/api/tasks/${t.id}/complete`, { as: u, body: {} });
    const before = (await api('GET', '/api/wishlist', { as: u })).body.coins as number;
    const bought = await api('POST', `/api/wishlist/${book.id}/buy`, { as: u });
    expect(bought.status).toBe(200);
    expect(bought.body.item).toMatchObject({ status: 'BOUGHT' });
    // the purchase unlocked wishlist_1 (10 coins): balance = before − 5 + 10
    expect(bought.body.coins).toBe(before - 5 + 10);
    expect((await unlocked(u)).has('wishlist_1')).toBe(true);
    expect((await api('POST', `/api/wishlist/${book.id}/buy`, { as: u })).status).toBe(409);
    expect((await api('POST', `/api/wishlist/${cake.id}/discard`, { as: u })).body.item).toMatchObject({ status: 'DISCARDED' });
    expect((await api('POST', `/api/wishlist/${cake.id}/buy`, { as: u })).status).toBe(409);
    // another user's item is not found, for buying and discarding alike
    const other = randomUUID();
    const mine = (await api('POST', '/api/wishlist', { as: other, body: { title: 'mine', price: 0 } })).body.item;
    expect((await api('POST', `/api/wishlist/${mine.id}/buy`, { as: u })).body.code).toBe('WISHLIST_NOT_FOUND');
    expect((await api('POST', `/api/wishlist/${mine.id}/discard`, { as: u })).status).toBe(404);
    const list = (await api('GET', '/api/wishlist', { as: u })).body.items as { title: string }[];
    expect(list.map((i) => i.title).sort()).toEqual(['A book', 'Cake']);
  });

  it('never lets concurrent purchases take the balance below zero', async () => {
    const u = randomUUID();
    const t = await createTask(u, { title: 'earn', type: 'ONE_TIME', coinValue: 10 });
    await api('POST', `/api/tasks/${t.id}/complete`, { as: u, body: {} });
    // The balance now: the task, tasks_1 and, depending on the hour, a secret achievement (night_owl
    // after 23:00). Prices are set from it so that exactly three of five purchases fit: the balance
    // plus wishlist_1's 10 coins (paid by the first purchase) covers three and not four.
    const balance = (await api('GET', '/api/wishlist', { as: u })).body.coins as number;
    const price = Math.floor((balance + 10) / 3);
    const items = await Promise.all([1, 2, 3, 4, 5].map((i) => api('POST', '/api/wishlist', { as: u, body: { title: `item ${i}`, price } })));
    const buys = await Promise.all(items.map((i) => api('POST', `/api/wishlist/${i.body.item.id}/buy`, { as: u })));
    expect(buys.map((b) => b.status).sort()).toEqual([200, 200, 200, 409, 409]);
    expect((await api('GET', '/api/wishlist', { as: u })).body.coins).toBe(balance + 10 - 3 * price);
  });
});

describe('energy check-in', () => {
  it('keeps one check-in per day (latest wins), sets the quest energy, and unlocks energy_streak_7 on the 7th day', async () => {
    const u = randomUUID();
    expect((await api('POST', '/api/energy-checkin', { as: u, body: { level: 'SLEEPY' } })).body.issues[0].path).toBe('body.level');
    const first = await api('POST', '/api/energy-checkin', { as: u, body: { level: 'HIGH' } });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ today: { date: today(), level: 'HIGH' }, streak: 1 });
    const second = await api('POST', '/api/energy-checkin', { as: u, body: { level: 'LOW' } });
    expect(second.body).toMatchObject({ today: { level: 'LOW' }, streak: 1, recent: [{ date: today(), level: 'LOW' }] });
    expect((await api('GET', '/api/settings/quest', { as: u })).body.energyLevel).toBe('LOW');
    // The quest prefers tasks of the checked-in energy.
    await createTask(u, { title: 'hard', type: 'ONE_TIME', energyLevel: 'HIGH' });
    await createTask(u, { title: 'easy', type: 'ONE_TIME', energyLevel: 'LOW' });
    expect((await api('GET', '/api/daily-quest', { as: u })).body.quest.title).toBe('easy');
    // Six earlier days of check-ins, as the days before would have left them; today's makes seven.
    await db.query('DELETE FROM tasks.energy_checkins WHERE user_id = $1', [u]);
    await db.query(
      `INSERT INTO tasks.energy_checkins (user_id, local_date, level) SELECT $1, $2::date - i, 'MEDIUM' FROM generate_series(1, 6) i`,
      [u, today()],
    );
    expect((await api('GET', '/api/energy-checkin', { as: u })).body).toMatchObject({ today: null, streak: 6 });
    expect((await unlocked(u)).has('energy_streak_7')).toBe(false);
    const seventh = await api('POST', '/api/energy-checkin', { as: u, body: { level: 'MEDIUM' } });
    expect(seventh.body.streak).toBe(7);
    expect((await unlocked(u)).has('energy_streak_7')).toBe(true);
  });
});

describe('paused tasks', () => {
  it('pause (until a date or open-ended) keeps a task out of the quest; resume brings it back', async () => {
    const u = randomUUID();
    const only = await createTask(u, { title: 'only one', type: 'ONE_TIME', dueDate: addDays(today(), -1) });
    const past = await api('POST', `/api/tasks/${only.id}/pause`, { as: u, body: { until: today() } });
    expect(past.status).toBe(400);
    expect(past.body.issues[0].path).toBe('body.until');
    const paused = await api('POST', `/api/tasks/${only.id}/pause`, { as: u, body: { until: addDays(today(), 3) } });
    expect(paused.status).toBe(200);
    expect(paused.body.task).toMatchObject({ pausedUntil: addDays(today(), 3), pausedAt: expect.any(String) });
    expect((await api('GET', '/api/daily-quest', { as: u })).body.quest).toBeNull();
    const resumed = await api('POST', `/api/tasks/${only.id}/resume`, { as: u, body: {} });
    expect(resumed.body.task).toMatchObject({ pausedAt: null, pausedUntil: null });
    expect((await api('GET', '/api/daily-quest', { as: u })).body.quest).toMatchObject({ id: only.id });
    // open-ended pause; another user's task is not found
    expect((await api('POST', `/api/tasks/${only.id}/pause`, { as: u })).body.task.pausedUntil).toBeNull();
    expect((await api('POST', `/api/tasks/${only.id}/pause`, { as: randomUUID() })).status).toBe(404);
    expect((await api('POST', `/api/tasks/${only.id}/resume`, { as: randomUUID() })).status).toBe(404);
  });
});

describe('vacation mode', () => {
  it('starts today, ends on request, silences reminders meanwhile and keeps the streak', async () => {
    const u = randomUUID();
    expect((await api('GET', '/api/settings/vacation-mode', { as: u })).body).toEqual({ active: false, startDate: null, endDate: null });
    const past = await api('PUT', '/api/settings/vacation-mode', { as: u, body: { active: true, endDate: addDays(today(), -1) } });
    expect(past.status).toBe(400);
    expect(past.body.issues[0].path).toBe('body.endDate');
    const on = await api('PUT', '/api/settings/vacation-mode', { as: u, body: { active: true, endDate: addDays(today(), 7) } });
    expect(on.body).toEqual({ active: true, startDate: today(), endDate: addDays(today(), 7) });
    // A streak whose last day was the day before the vacation stays alive through it.
    await db.query('UPDATE tasks.profiles SET streak_current = 5, streak_max = 5, streak_last_date = $2, vacation_start_date = $3 WHERE user_id = $1', [
      u,
      addDays(today(), -4),
      addDays(today(), -3),
    ]);
    expect((await api('GET', '/api/stats', { as: u })).body.streak.current).toBe(5);
    const t = await createTask(u, { title: 'back', type: 'ONE_TIME' });
    await api('POST', `/api/tasks/${t.id}/complete`, { as: u, body: {} });
    expect((await api('GET', '/api/stats', { as: u })).body.streak).toMatchObject({ current: 6, max: 6 });
    // Ending it keeps the past days on record (start stays, end is yesterday).
    const off = await api('PUT', '/api/settings/vacation-mode', { as: u, body: { active: false } });
    expect(off.body).toEqual({ active: false, startDate: addDays(today(), -3), endDate: addDays(today(), -1) });
    // Started and ended on the same day: nothing to remember.
    const v = randomUUID();
    await api('PUT', '/api/settings/vacation-mode', { as: v, body: { active: true } });
    expect((await api('GET', '/api/settings/vacation-mode', { as: v })).body).toEqual({ active: true, startDate: today(), endDate: null });
    expect((await api('PUT', '/api/settings/vacation-mode', { as: v, body: { active: false } })).body).toEqual({ active: false, startDate: null, endDate: null });
  });
});

/**
 * Every achievement can be unlocked by a user. Each recipe starts a fresh user; where a milestone
 * needs history (days of streak, hundreds of completions, coins), that history is seeded as the
 * earlier days would have left it, and the final step is always the user's own action through the API.
 */
describe('every achievement is reachable', () => {
  const complete = async (u: string, body: Record<string, unknown> = {}) => {
    const t = await createTask(u, { title: 'step', type: 'ONE_TIME', ...body });
    const r = await api('POST', `/api/tasks/${t.id}/complete`, { as: u, body: {} });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
  };
  const completeQuest = async (u: string) => {
    await createTask(u, { title: 'quest material', type: 'ONE_TIME' });
    const q = await api('GET', '/api/daily-quest', { as: u });
    expect((await api('POST', `/api/tasks/${q.body.quest.id}/complete`, { as: u, body: {} })).status).toBe(200);
  };
  const seedCompletions = (u: string, n: number) =>
    db.query(`INSERT INTO tasks.task_completions (user_id, completed_at, local_date) SELECT $1, now() - i * interval '1 hour', $2::date FROM generate_series(1, $3) i`, [u, today(), n]);
  const seedProfile = async (u: string, cols: Record<string, unknown>) => {
    await api('GET', '/api/settings/profile', { as: u }); // creates the profile
    const names = Object.keys(cols);
    await db.query(`UPDATE tasks.profiles SET ${names.map((n, i) => `${n} = $${i + 2}`).join(', ')} WHERE user_id = $1`, [u, ...Object.values(cols)]);
  };
  const yesterday = () => addDays(today(), -1);
  /** Complete a task at a local hour; tried again if the hour turned between choosing the zone and completing. */
  const completeAtLocalHour = async (u: string, hour: number, key: string) => {
    for (let attempt = 0; attempt < 3 && !(await unlocked(u)).has(key); attempt++) {
      expect((await api('PUT', '/api/settings/timezone', { as: u, body: { timezone: zoneAtLocalHour(hour) } })).status).toBe(200);
      await complete(u);
    }
  };

  const recipes: Record<string, (u: string) => Promise<void>> = {
    ...Object.fromEntries(
      [1, 10, 50, 100, 200, 500, 1000].map((n) => [
        `tasks_${n}`,
        async (u: string) => {
          await seedCompletions(u, n - 1);
          await complete(u);
        },
      ]),
    ),
    ...Object.fromEntries(
      [3, 7, 14, 30, 60, 100, 365].map((n) => [
        `streak_${n}`,
        async (u: string) => {
          await seedProfile(u, { streak_current: n - 1, streak_max: n - 1, streak_last_date: yesterday() });
          await complete(u);
        },
      ]),
    ),
    coins_100: async (u) => {
      await seedProfile(u, { coins: 99 });
      await complete(u);
    },
    coins_500: async (u) => {
      await seedProfile(u, { coins: 499 });
      await complete(u);
    },
    // Levels come from coins earned over time, not from the balance (issue 55, bug 5).
    level_5: async (u) => {
      await seedProfile(u, { coins: 0, coins_earned: 499 });
      await complete(u);
    },
    level_10: async (u) => {
      await seedProfile(u, { coins: 0, coins_earned: 2999 });
      await complete(u);
    },
    first_quest: completeQuest,
    quest_streak_7: async (u) => {
      await seedProfile(u, { quest_streak_current: 6, quest_streak_max: 6, quest_streak_last_date: yesterday() });
      await completeQuest(u);
    },
    quest_streak_30: async (u) => {
      await seedProfile(u, { quest_streak_current: 29, quest_streak_max: 29, quest_streak_last_date: yesterday() });
      await completeQuest(u);
    },
    topics_1: async (u) => void (await api('POST', '/api/topics', { as: u, body: { title: 'home' } })),
    topics_5: async (u) => {
      for (const title of ['a', 'b', 'c', 'd', 'e']) expect((await api('POST', '/api/topics', { as: u, body: { title } })).status).toBe(201);
    },
    sequential_topic: async (u) => void (await api('POST', '/api/topics', { as: u, body: { title: 'steps', sequential: true } })),
    first_high_priority: (u) => complete(u, { priority: 'HIGH' }),
    wishlist_1: async (u) => {
      const item = (await api('POST', '/api/wishlist', { as: u, body: { title: 'free', price: 0 } })).body.item;
      expect((await api('POST', `/api/wishlist/${item.id}/buy`, { as: u })).status).toBe(200);
    },
    wishlist_10: async (u) => {
      for (let i = 0; i < 10; i++) {
        const item = (await api('POST', '/api/wishlist', { as: u, body: { title: `free ${i}`, price: 0 } })).body.item;
        expect((await api('POST', `/api/wishlist/${item.id}/buy`, { as: u })).status).toBe(200);
      }
    },
    energy_streak_7: async (u) => {
      await db.query(`INSERT INTO tasks.energy_checkins (user_id, local_date, level) SELECT $1, $2::date - i, 'HIGH' FROM generate_series(1, 6) i`, [u, today()]);
      expect((await api('POST', '/api/energy-checkin', { as: u, body: { level: 'HIGH' } })).body.streak).toBe(7);
    },
    night_owl: (u) => completeAtLocalHour(u, 23, 'night_owl'),
    early_bird: (u) => completeAtLocalHour(u, 3, 'early_bird'),
    // Yesterday's quest, left undone, caught up today beside today's own: UTC−10 and UTC+14 are
    // exactly one calendar day apart, so a change of zone is a change of day.
    double_shift: async (u) => {
      await api('PUT', '/api/settings/timezone', { as: u, body: { timezone: 'Etc/GMT+10' } });
      await createTask(u, { title: 'first', type: 'ONE_TIME' });
      await createTask(u, { title: 'second', type: 'ONE_TIME' });
      const yesterdays = (await api('GET', '/api/daily-quest', { as: u })).body;
      await api('PUT', '/api/settings/timezone', { as: u, body: { timezone: 'Etc/GMT-14' } });
      let todays = (await api('GET', '/api/daily-quest', { as: u })).body;
      expect(todays.date).toBe(addDays(yesterdays.date, 1));
      if (todays.quest.id === yesterdays.quest.id) todays = (await api('POST', '/api/daily-quest', { as: u })).body;
      expect(todays.quest.id).not.toBe(yesterdays.quest.id);
      expect((await api('POST', `/api/tasks/${todays.quest.id}/complete`, { as: u, body: {} })).status).toBe(200);
      expect((await api('POST', `/api/tasks/${yesterdays.quest.id}/complete`, { as: u, body: {} })).status).toBe(200);
    },
  };

  it('has a recipe for every achievement, and each recipe unlocks it', async () => {
    const list = (await api('GET', '/api/achievements', { as: randomUUID() })).body.achievements as { key: string }[];
    expect(list.map((a) => a.key).sort()).toEqual(Object.keys(recipes).sort());
    const missed: string[] = [];
    for (const { key } of list) {
      const u = randomUUID();
      await recipes[key]!(u);
      if (!(await unlocked(u)).has(key)) missed.push(key);
    }
    expect(missed).toEqual([]);
  }, 120_000);
});
