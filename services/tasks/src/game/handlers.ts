import { AppError, type DailyQuestReply, type HttpCall } from '@tasksvc/proto';
import { inTransaction, type Queryable } from '@tasksvc/runtime';
import { unlockedAchievements } from '../db/achievements.ts';
import { ensureProfile, lockProfile, updateProfile, type ProfileColumns, type ProfileRow } from '../db/profiles.ts';
import { dropQuest, lastQuestPostponement, markRestored, questCompleted, restoreQuest as restoreDailyQuest, setRerolledAway } from '../db/quests.ts';
import { gameFigures } from '../db/reports.ts';
import { getTask, unpostponeDates } from '../db/tasks.ts';
import { emitTaskEvent, toTask, transact, userOf, type Ctx } from '../handlers/common.ts';
import { ACHIEVEMENTS, RARITY_REWARD } from './domain/achievements.ts';
import { addDays, localDate, weekOf } from './domain/dates.ts';
import { levelProgress } from './domain/levels.ts';
import type { Energy } from './domain/quest.ts';
import { postponeTask, postponesOn } from './postponements.ts';
import { streakAlive, streakAsOf } from './domain/streak.ts';
import { streaksOf } from './streak-columns.ts';
import { ensureQuests, syncQuestFlags } from './quests.ts';
import { weeklyReviews } from './review.ts';
import { unlockAchievements } from './unlock.ts';

type Call<Q = unknown, B = unknown> = HttpCall<unknown, Q, B>;

/** The caller, their profile (created on first use; locked for the transaction with `lock`), their streaks and their local today. */
export async function who(c: Queryable, call: Call, lock = false) {
  const user = userOf(call);
  const profile = lock ? await lockProfile(c, user.id) : await ensureProfile(c, user.id);
  return { userId: user.id, profile, ...streaksOf(profile), today: localDate(new Date(), profile.timezone) };
}

async function questReply(c: Queryable, u: Awaited<ReturnType<typeof who>>, opts: { exclude?: Set<string>; rerolledAway?: Set<string> } = {}): Promise<DailyQuestReply> {
  const mine = (ids?: Set<string>) => (ids ? new Map([[u.userId, ids]]) : undefined);
  const quests = await ensureQuests(c, [{ userId: u.userId, date: u.today, energy: u.profile.energyLevel }], { exclude: mine(opts.exclude), rerolledAway: mine(opts.rerolledAway) });
  const q = quests.get(u.userId);
  const row = q ? await getTask(c, u.userId, q.taskId, u.today) : null;
  return {
    date: u.today,
    quest: row ? toTask(row) : null,
    tier: q?.tier ?? null,
    completed: Boolean(q?.completedAt),
    postponesToday: await postponesOn(c, u.userId, u.today),
    postponeLimit: u.profile.postponeLimit,
  };
}

export async function getQuest(ctx: Ctx, call: Call): Promise<DailyQuestReply> {
  return inTransaction(ctx.pool, async (c) => questReply(c, await who(c, call)));
}

/**
 * Replace today's quest (a re-roll or a postpone): the new pick avoids the old one and every task
 * re-rolled away today while anything else qualifies, and the day's re-roll history moves onto it
 * (a re-roll adds the old task), so neither a re-roll nor a postpone swings back to a task re-rolled
 * away. Only a re-roll may fall back to the old task: a postponed one belongs to tomorrow.
 */
async function replaceQuest(c: Queryable, u: Awaited<ReturnType<typeof who>>, why: 'reroll' | 'postpone'): Promise<DailyQuestReply> {
  const old = await dropQuest(c, u.userId, u.today);
  if (!old) return questReply(c, u);
  const exclude = new Set([old.taskId]);
  let reply = await questReply(c, u, { exclude, rerolledAway: new Set(old.rerolledAway) });
  if (!reply.quest) reply = await questReply(c, u, why === 'postpone' ? { exclude } : {});
  await setRerolledAway(c, u.userId, u.today, why === 'reroll' ? [...new Set([...old.rerolledAway, old.taskId])] : old.rerolledAway);
  return reply;
}

/** POST /api/daily-quest: a new pick for today, avoiding the current one while anything else qualifies. */
export async function rerollQuest(ctx: Ctx, call: Call): Promise<DailyQuestReply> {
  return inTransaction(ctx.pool, async (c) => {
    const u = await who(c, call, true);
    // A completed quest stays: re-rolling it would let a second quest count for the same day.
    if (await questCompleted(c, u.userId, u.today)) throw new AppError('CONFLICT', "today's quest is already completed");
    const reply = await replaceQuest(c, u, 'reroll');
    await syncQuestFlags(c, [u.userId]);
    return reply;
  });
}

/** POST /api/daily-quest/postpone (reference §4): to tomorrow, counted against the daily limit. */
export async function postponeQuest(ctx: Ctx, call: Call): Promise<DailyQuestReply> {
  return transact(ctx, async (c) => {
    const u = await who(c, call, true);
    const quest = (await ensureQuests(c, [{ userId: u.userId, date: u.today, energy: u.profile.energyLevel }])).get(u.userId);
    if (!quest) throw new AppError('NOT_FOUND', 'there is no quest to postpone today');
    if (quest.completedAt) throw new AppError('CONFLICT', "today's quest is already completed");
    await postponeTask(c, u.userId, u.today, quest.taskId, 'quest');
    const moved = await getTask(c, u.userId, quest.taskId, u.today);
    if (moved) await emitTaskEvent(c, 'task.updated', moved);
    const r = await replaceQuest(c, u, 'postpone');
    await syncQuestFlags(c, [u.userId]);
    return r;
  });
}

/** POST /api/daily-quest/restore: undo today's latest postponement and make that task the quest again. */
export async function restoreQuest(ctx: Ctx, call: Call): Promise<DailyQuestReply> {
  return transact(ctx, async (c) => {
    const u = await who(c, call, true);
    const p = await lastQuestPostponement(c, u.userId, u.today);
    if (!p) throw new AppError('NOT_FOUND', 'nothing postponed today to restore');
    if (await questCompleted(c, u.userId, u.today)) throw new AppError('CONFLICT', "today's quest is already completed");
    await markRestored(c, p.id);
    await unpostponeDates(c, u.userId, p.taskId, { dueDate: p.previousDueDate, snoozedUntil: p.previousSnoozedUntil });
    await restoreDailyQuest(c, u.userId, u.today, p.taskId);
    await syncQuestFlags(c, [u.userId]);
    const restored = await getTask(c, u.userId, p.taskId, u.today);
    if (restored) await emitTaskEvent(c, 'task.updated', restored);
    return questReply(c, u);
  });
}

/** GET /api/achievements, granting any milestone reached outside a completion (e.g. topics) first. */
export async function achievements(ctx: Ctx, call: Call) {
  return inTransaction(ctx.pool, async (c) => {
    const u = await who(c, call, true);
    await unlockAchievements(c, u.userId, null);
    const have = await unlockedAchievements(c, u.userId);
    const list = ACHIEVEMENTS.map((a) => {
      const at = have.get(a.key);
      const hidden = a.secret && !at;
      return {
        key: a.key,
        title: hidden ? '???' : a.title,
        description: hidden ? 'Secret achievement' : a.description,
        rarity: a.rarity,
        category: a.category,
        secret: a.secret,
        reward: RARITY_REWARD[a.rarity],
        unlocked: Boolean(at),
        unlockedAt: at ? at.toISOString() : null,
      };
    });
    return { achievements: list, unlocked: have.size, total: ACHIEVEMENTS.length };
  });
}

export async function weeklyReview(ctx: Ctx, call: Call<{ date?: string }>) {
  const c = ctx.pool;
  const u = await who(c, call);
  const week = weekOf(call.query.date ?? u.today);
  const reviews = await weeklyReviews(c, [{ userId: u.userId, timezone: u.profile.timezone, week, streak: u.streak, today: u.today }]);
  return reviews.get(u.userId)!;
}

export async function stats(ctx: Ctx, call: Call) {
  const c = ctx.pool;
  const u = await who(c, call);
  const figures = await gameFigures(c, u.userId, addDays(u.today, -29), u.today);
  const s = u.streak;
  const questAlive = streakAlive(u.questStreak, u.today, { shield: false });
  const lp = levelProgress(u.profile.coinsEarned);
  return {
    date: u.today,
    coins: u.profile.coins,
    coinsEarned: u.profile.coinsEarned,
    level: lp.level,
    levelStart: lp.levelStart,
    nextLevelAt: lp.nextLevelAt,
    streak: { current: streakAsOf(s, u.today), max: s.max, lastDate: s.lastDate, shieldAvailable: s.shieldUsedMonth !== u.today.slice(0, 7) },
    questStreak: { current: questAlive ? u.profile.questStreakCurrent : 0, max: u.profile.questStreakMax, lastDate: u.profile.questStreakLastDate },
    tasksCompleted: figures.tasks,
    questsCompleted: figures.quests,
    achievementsUnlocked: figures.achievements,
    completionsByDay: figures.byDay,
  };
}

export async function getQuestSettings(ctx: Ctx, call: Call) {
  const u = await who(ctx.pool, call);
  return { postponeLimit: u.profile.postponeLimit, energyLevel: u.profile.energyLevel };
}

export async function setQuestSettings(ctx: Ctx, call: Call<unknown, { postponeLimit?: number; energyLevel?: Energy | null }>) {
  const userId = userOf(call).id;
  await ensureProfile(ctx.pool, userId);
  await updateProfile(ctx.pool, userId, { postponeLimit: call.body.postponeLimit, energyLevel: call.body.energyLevel });
  return getQuestSettings(ctx, call);
}

/** Body field → the profile's switch and time for the reminder settings. */
const REMINDERS = {
  dueToday: ['dueTodayReminderEnabled', 'dueTodayReminderTime'],
  overdue: ['overdueReminderEnabled', 'overdueReminderTime'],
  recurringDue: ['recurringDueReminderEnabled', 'recurringDueReminderTime'],
  morningBriefing: ['morningBriefingEnabled', 'morningBriefingTime'],
} as const satisfies Record<string, readonly [keyof ProfileColumns, keyof ProfileColumns]>;

export function notificationSettings(p: ProfileRow) {
  const reminder = ([enabled, time]: (typeof REMINDERS)[keyof typeof REMINDERS]) => ({ enabled: p[enabled], time: p[time] });
  return {
    enabled: p.notificationEnabled,
    time: p.notificationTime,
    streakReminderTime: p.streakReminderTime,
    weeklyReviewTime: p.weeklyReviewTime,
    streakReminderEnabled: p.streakReminderEnabled,
    weeklyReviewEnabled: p.weeklyReviewEnabled,
    dueToday: reminder(REMINDERS.dueToday),
    overdue: reminder(REMINDERS.overdue),
    recurringDue: reminder(REMINDERS.recurringDue),
    morningBriefing: reminder(REMINDERS.morningBriefing),
  };
}

export async function getNotificationSettings(ctx: Ctx, call: Call) {
  return notificationSettings(await ensureProfile(ctx.pool, userOf(call).id));
}

type NotificationBody = {
  enabled?: boolean;
  time?: string;
  streakReminderTime?: string;
  weeklyReviewTime?: string;
  streakReminderEnabled?: boolean;
  weeklyReviewEnabled?: boolean;
} & Partial<Record<keyof typeof REMINDERS, { enabled?: boolean; time?: string }>>;

export async function setNotificationSettings(ctx: Ctx, call: Call<unknown, NotificationBody>) {
  const userId = userOf(call).id;
  await ensureProfile(ctx.pool, userId);
  const b = call.body;
  const cols: ProfileColumns = {
    notificationEnabled: b.enabled,
    notificationTime: b.time,
    streakReminderEnabled: b.streakReminderEnabled,
    streakReminderTime: b.streakReminderTime,
    weeklyReviewEnabled: b.weeklyReviewEnabled,
    weeklyReviewTime: b.weeklyReviewTime,
  };
  for (const [field, [enabled, time]] of Object.entries(REMINDERS) as [keyof typeof REMINDERS, (typeof REMINDERS)[keyof typeof REMINDERS]][]) {
    Object.assign(cols, { [enabled]: b[field]?.enabled, [time]: b[field]?.time });
  }
  if (Object.values(cols).some((v) => v !== undefined)) await updateProfile(ctx.pool, userId, cols);
  return getNotificationSettings(ctx, call);
}
