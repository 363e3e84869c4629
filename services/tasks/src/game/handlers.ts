import { AppError, type DailyQuestReply, type HttpCall } from '@tasksvc/proto';
import { inTransaction, type Pool, type PoolClient } from '@tasksvc/runtime';
import { ensureProfile, type ProfileRow } from '../db/profiles.ts';
import { getTask } from '../db/tasks.ts';
import { emitTaskEvent, toTask, transact, userOf, type Ctx } from '../handlers/common.ts';
import { ACHIEVEMENTS, RARITY_REWARD } from './domain/achievements.ts';
import { addDays, localDate, weekOf } from './domain/dates.ts';
import { levelProgress } from './domain/levels.ts';
import type { Energy } from './domain/quest.ts';
import { postponeTask, postponesOn } from './postponements.ts';
import { streakAlive, streakAsOf } from './domain/streak.ts';
import { STREAK_COLUMNS, streaksOf, type StreakColumns } from './streak-columns.ts';
import { ensureQuests, syncQuestFlags } from './quests.ts';
import { weeklyReviews } from './review.ts';
import { unlockAchievements } from './unlock.ts';

type Call<Q = unknown, B = unknown> = HttpCall<unknown, Q, B>;
type Db = Pick<PoolClient, 'query'>;

interface GameProfile extends StreakColumns {
  energy_level: Energy | null;
}

/** The caller, their profile (created on first use; locked with `lock`) and their local today. */
export async function who(c: Db, call: Call, lock = false) {
  const user = userOf(call);
  const profile: ProfileRow = await ensureProfile(c, user.id);
  const { rows } = await c.query<GameProfile>(
    `SELECT p.energy_level, ${STREAK_COLUMNS} FROM tasks.profiles p WHERE p.user_id = $1 ${lock ? 'FOR UPDATE' : ''}`,
    [user.id],
  );
  const game = rows[0]!;
  return { userId: user.id, profile, game, ...streaksOf(game), today: localDate(new Date(), profile.timezone) };
}

async function questReply(c: Db, u: Awaited<ReturnType<typeof who>>, opts: { exclude?: Set<string> } = {}): Promise<DailyQuestReply> {
  const exclude = opts.exclude ? new Map([[u.userId, opts.exclude]]) : undefined;
  const quests = await ensureQuests(c, [{ userId: u.userId, date: u.today, energy: u.game.energy_level }], { exclude });
  const q = quests.get(u.userId);
  const row = q ? await getTask(c, u.userId, q.task_id, u.today) : null;
  return {
    date: u.today,
    quest: row ? toTask(row) : null,
    tier: q?.tier ?? null,
    completed: Boolean(q?.completed_at),
    postponesToday: await postponesOn(c, u.userId, u.today),
    postponeLimit: u.profile.postpone_limit,
  };
}

export async function getQuest(ctx: Ctx, call: Call): Promise<DailyQuestReply> {
  return inTransaction(ctx.pool, async (c) => questReply(c, await who(c, call)));
}

/** POST /api/daily-quest: a new pick for today, avoiding the current one while anything else qualifies. */
export async function rerollQuest(ctx: Ctx, call: Call): Promise<DailyQuestReply> {
  return inTransaction(ctx.pool, async (c) => {
    const u = await who(c, call, true);
    // A completed quest stays: re-rolling it would let a second quest count for the same day.
    const done = await c.query('SELECT 1 FROM tasks.daily_quests WHERE user_id = $1 AND local_date = $2 AND completed_at IS NOT NULL', [u.userId, u.today]);
    if ((done.rowCount ?? 0) > 0) throw new AppError('CONFLICT', "today's quest is already completed");
    const { rows } = await c.query<{ task_id: string }>('DELETE FROM tasks.daily_quests WHERE user_id = $1 AND local_date = $2 RETURNING task_id', [u.userId, u.today]);
    const old = rows[0]?.task_id;
    let reply = await questReply(c, u, { exclude: old ? new Set([old]) : undefined });
    if (!reply.quest && old) reply = await questReply(c, u);
    await syncQuestFlags(c, [u.userId]);
    return reply;
  });
}

/** POST /api/daily-quest/postpone (reference §4): to tomorrow, counted against the daily limit. */
export async function postponeQuest(ctx: Ctx, call: Call): Promise<DailyQuestReply> {
  return transact(ctx, async (c) => {
    const u = await who(c, call, true);
    const quest = (await ensureQuests(c, [{ userId: u.userId, date: u.today, energy: u.game.energy_level }])).get(u.userId);
    if (!quest) throw new AppError('NOT_FOUND', 'there is no quest to postpone today');
    if (quest.completed_at) throw new AppError('CONFLICT', "today's quest is already completed");
    await postponeTask(c, u.userId, u.today, quest.task_id, 'quest');
    await c.query('DELETE FROM tasks.daily_quests WHERE user_id = $1 AND local_date = $2', [u.userId, u.today]);
    const moved = await getTask(c, u.userId, quest.task_id, u.today);
    if (moved) await emitTaskEvent(c, 'task.updated', moved);
    const r = await questReply(c, u, { exclude: new Set([quest.task_id]) });
    await syncQuestFlags(c, [u.userId]);
    return r;
  });
}

/** POST /api/daily-quest/restore: undo today's latest postponement and make that task the quest again. */
export async function restoreQuest(ctx: Ctx, call: Call): Promise<DailyQuestReply> {
  return transact(ctx, async (c) => {
    const u = await who(c, call, true);
    const { rows } = await c.query<{ id: string; task_id: string; previous_due_date: string | null; previous_snoozed_until: string | null }>(
      `SELECT id, task_id, previous_due_date::text, previous_snoozed_until::text FROM tasks.quest_postponements
        WHERE user_id = $1 AND local_date = $2 AND restored_at IS NULL AND via = 'quest' ORDER BY created_at DESC LIMIT 1`,
      [u.userId, u.today],
    );
    const p = rows[0];
    if (!p) throw new AppError('NOT_FOUND', 'nothing postponed today to restore');
    const current = await c.query<{ completed_at: Date | null }>('SELECT completed_at FROM tasks.daily_quests WHERE user_id = $1 AND local_date = $2', [u.userId, u.today]);
    if (current.rows[0]?.completed_at) throw new AppError('CONFLICT', "today's quest is already completed");
    await c.query('UPDATE tasks.quest_postponements SET restored_at = now() WHERE id = $1', [p.id]);
    await c.query(
      `UPDATE tasks.tasks SET due_date = CASE WHEN type = 'RECURRING' THEN due_date ELSE $3::date END,
              next_due_date = CASE WHEN type = 'RECURRING' THEN $3::date ELSE next_due_date END, snoozed_until = $4,
              postpone_count = GREATEST(postpone_count - 1, 0), updated_at = now()
        WHERE id = $2 AND user_id = $1`,
      [u.userId, p.task_id, p.previous_due_date, p.previous_snoozed_until],
    );
    await c.query(
      `INSERT INTO tasks.daily_quests (user_id, local_date, task_id, tier) VALUES ($1, $2, $3, 'restored')
       ON CONFLICT (user_id, local_date) DO UPDATE SET task_id = EXCLUDED.task_id, tier = EXCLUDED.tier, completed_at = NULL, created_at = now()`,
      [u.userId, u.today, p.task_id],
    );
    await syncQuestFlags(c, [u.userId]);
    const restored = await getTask(c, u.userId, p.task_id, u.today);
    if (restored) await emitTaskEvent(c, 'task.updated', restored);
    return questReply(c, u);
  });
}

/** GET /api/achievements, granting any milestone reached outside a completion (e.g. topics) first. */
export async function achievements(ctx: Ctx, call: Call) {
  return inTransaction(ctx.pool, async (c) => {
    const u = await who(c, call, true);
    await unlockAchievements(c, u.userId, null);
    const { rows } = await c.query<{ achievement_key: string; unlocked_at: Date }>('SELECT achievement_key, unlocked_at FROM tasks.user_achievements WHERE user_id = $1', [u.userId]);
    const have = new Map(rows.map((r) => [r.achievement_key, r.unlocked_at]));
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
  const since = addDays(u.today, -29);
  const [counts, byDay] = await Promise.all([
    c.query<{ tasks: number; quests: number; achievements: number }>(
      `SELECT (SELECT count(*)::int FROM tasks.task_completions WHERE user_id = $1) AS tasks,
              (SELECT count(*)::int FROM tasks.task_completions WHERE user_id = $1 AND was_daily_quest) AS quests,
              (SELECT count(*)::int FROM tasks.user_achievements WHERE user_id = $1) AS achievements`,
      [u.userId],
    ),
    c.query<{ date: string; count: number }>(
      `SELECT d::date::text AS date, count(tc.id)::int AS count
         FROM generate_series($2::date, $3::date, interval '1 day') AS d
         LEFT JOIN tasks.task_completions tc ON tc.user_id = $1 AND tc.local_date = d::date
        GROUP BY d ORDER BY d`,
      [u.userId, since, u.today],
    ),
  ]);
  const s = u.streak;
  const questAlive = streakAlive(u.questStreak, u.today, { shield: false });
  const lp = levelProgress(u.profile.coins);
  return {
    date: u.today,
    coins: u.profile.coins,
    level: lp.level,
    levelStart: lp.levelStart,
    nextLevelAt: lp.nextLevelAt,
    streak: { current: streakAsOf(s, u.today), max: s.max, lastDate: s.lastDate, shieldAvailable: s.shieldUsedMonth !== u.today.slice(0, 7) },
    questStreak: { current: questAlive ? u.game.quest_streak_current : 0, max: u.game.quest_streak_max, lastDate: u.game.quest_streak_last_date },
    tasksCompleted: counts.rows[0]!.tasks,
    questsCompleted: counts.rows[0]!.quests,
    achievementsUnlocked: counts.rows[0]!.achievements,
    completionsByDay: byDay.rows,
  };
}

export async function getQuestSettings(ctx: Ctx, call: Call) {
  const u = await who(ctx.pool, call);
  return { postponeLimit: u.profile.postpone_limit, energyLevel: u.game.energy_level };
}

export async function setQuestSettings(ctx: Ctx, call: Call<unknown, { postponeLimit?: number; energyLevel?: Energy | null }>) {
  const userId = userOf(call).id;
  await ensureProfile(ctx.pool, userId);
  const b = call.body;
  await ctx.pool.query(
    `UPDATE tasks.profiles SET postpone_limit = COALESCE($2, postpone_limit),
            energy_level = CASE WHEN $3 THEN $4 ELSE energy_level END, updated_at = now() WHERE user_id = $1`,
    [userId, b.postponeLimit ?? null, b.energyLevel !== undefined, b.energyLevel ?? null],
  );
  return getQuestSettings(ctx, call);
}

/** Body field → profile column for the reminder settings. */
const REMINDERS = {
  dueToday: ['due_today_reminder_enabled', 'due_today_reminder_time'],
  overdue: ['overdue_reminder_enabled', 'overdue_reminder_time'],
  recurringDue: ['recurring_due_reminder_enabled', 'recurring_due_reminder_time'],
  morningBriefing: ['morning_briefing_enabled', 'morning_briefing_time'],
} as const;

async function readNotificationSettings(pool: Pool, userId: string) {
  const p = await ensureProfile(pool, userId);
  const { rows } = await pool.query<{ t: string }>(`SELECT to_char(streak_reminder_time, 'HH24:MI') AS t FROM tasks.profiles WHERE user_id = $1`, [userId]);
  return {
    enabled: p.notification_enabled,
    time: p.notification_time,
    streakReminderTime: rows[0]!.t,
    weeklyReviewTime: p.weekly_review_time,
    dueToday: { enabled: p.due_today_reminder_enabled, time: p.due_today_reminder_time },
    overdue: { enabled: p.overdue_reminder_enabled, time: p.overdue_reminder_time },
    recurringDue: { enabled: p.recurring_due_reminder_enabled, time: p.recurring_due_reminder_time },
    morningBriefing: { enabled: p.morning_briefing_enabled, time: p.morning_briefing_time },
  };
}

export async function getNotificationSettings(ctx: Ctx, call: Call) {
  return readNotificationSettings(ctx.pool, userOf(call).id);
}

type NotificationBody = {
  enabled?: boolean;
  time?: string;
  streakReminderTime?: string;
  weeklyReviewTime?: string;
} & Partial<Record<keyof typeof REMINDERS, { enabled?: boolean; time?: string }>>;

export async function setNotificationSettings(ctx: Ctx, call: Call<unknown, NotificationBody>) {
  const userId = userOf(call).id;
  await ensureProfile(ctx.pool, userId);
  const b = call.body;
  // Column names come from the fixed tables above, never from input; values are parameters.
  const sets: [string, unknown][] = [];
  if (b.enabled !== undefined) sets.push(['notification_enabled', b.enabled]);
  if (b.time !== undefined) sets.push(['notification_time', b.time]);
  if (b.streakReminderTime !== undefined) sets.push(['streak_reminder_time', b.streakReminderTime]);
  if (b.weeklyReviewTime !== undefined) sets.push(['weekly_review_time', b.weeklyReviewTime]);
  for (const [field, [enabledCol, timeCol]] of Object.entries(REMINDERS) as [keyof typeof REMINDERS, readonly [string, string]][]) {
    const r = b[field];
    if (r?.enabled !== undefined) sets.push([enabledCol, r.enabled]);
    if (r?.time !== undefined) sets.push([timeCol, r.time]);
  }
  if (sets.length > 0) {
    await ctx.pool.query(`UPDATE tasks.profiles SET ${sets.map(([col], i) => `${col} = $${i + 2}`).join(', ')}, updated_at = now() WHERE user_id = $1`, [userId, ...sets.map(([, v]) => v)]);
  }
  return readNotificationSettings(ctx.pool, userId);
}
