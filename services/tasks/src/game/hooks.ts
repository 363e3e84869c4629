import type { PoolClient } from '@tasksvc/runtime';
import type { TaskRow } from '../db/tasks.ts';
import { localParts } from './domain/dates.ts';
import { recordActivity } from './domain/streak.ts';
import { STREAK_COLUMNS, streaksOf, type StreakColumns } from './streak-columns.ts';
import { unlockAchievements } from './unlock.ts';

/**
 * Game hooks: the tasks service calls these inside the transaction that completes or un-completes a
 * task, so streaks, achievements and quests change atomically with the completion (an undo reverts
 * both). They may read and write the tasks schema through `client` and must not commit or roll back.
 */
export interface CompletionInfo {
  userId: string;
  /** the task row after the change */
  task: TaskRow;
  /** id of the task_completions row (created on complete, deleted on undo) */
  completionId: string;
  /** the instant of the completion */
  completedAt: Date;
  /** the completion's calendar date in the user's timezone */
  localDate: string;
  /** coins the completion granted (and an undo takes back) */
  awardedCoins: number;
}

interface GameProfile extends StreakColumns {
  timezone: string;
}

/** Streaks, quest streak and achievements after a completion (reference §5, §7, §8). */
export async function afterComplete(c: PoolClient, info: CompletionInfo): Promise<void> {
  // Lock the profile: two completions at once must not both read the same streak.
  const { rows } = await c.query<GameProfile>(
    `SELECT p.timezone, ${STREAK_COLUMNS} FROM tasks.profiles p WHERE p.user_id = $1 FOR UPDATE`,
    [info.userId],
  );
  const p = rows[0];
  if (!p) return;
  // Today's quest, or yesterday's left undone and caught up today: both count as a quest done today
  // (double_shift), but only today's own quest extends the quest streak.
  const quest = await c.query<{ local_date: string }>(
    `UPDATE tasks.daily_quests SET completed_at = $4
      WHERE user_id = $1 AND local_date IN ($2::date, $2::date - 1) AND task_id = $3 AND completed_at IS NULL RETURNING local_date::text`,
    [info.userId, info.localDate, info.task.id, info.completedAt],
  );
  const isQuest = quest.rows.some((r) => r.local_date === info.localDate);
  const caughtUp = quest.rows.length > 0;
  if (caughtUp) await c.query('UPDATE tasks.task_completions SET was_daily_quest = true WHERE id = $1', [info.completionId]);

  const before = streaksOf(p);
  const streak = recordActivity(before.streak, info.localDate, { shield: true }).state;
  const questBefore = before.questStreak;
  const questStreak = isQuest ? recordActivity(questBefore, info.localDate, { shield: false }).state : questBefore;
  await c.query(
    `UPDATE tasks.profiles SET streak_current = $2, streak_max = $3, streak_last_date = $4, streak_shield_used_month = $5,
            quest_streak_current = $6, quest_streak_max = $7, quest_streak_last_date = $8, updated_at = now()
      WHERE user_id = $1`,
    [info.userId, streak.current, streak.max, streak.lastDate, streak.shieldUsedMonth, questStreak.current, questStreak.max, questStreak.lastDate],
  );

  const today = await c.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM tasks.task_completions WHERE user_id = $1 AND local_date = $2 AND was_daily_quest',
    [info.userId, info.localDate],
  );
  await unlockAchievements(c, info.userId, { localHour: localParts(info.completedAt, p.timezone).hour, questsCompletedToday: today.rows[0]?.n ?? 0 });
}

/**
 * After an undo the day's quest is open again. Streaks and achievements stay: a streak counts days
 * with activity as they happened, and unlocks are permanent (reference §7); the coins of the undone
 * completion itself are taken back by the tasks service, exactly as recorded.
 */
export async function afterUndo(c: PoolClient, info: CompletionInfo): Promise<void> {
  await c.query('UPDATE tasks.daily_quests SET completed_at = NULL WHERE user_id = $1 AND local_date IN ($2::date, $2::date - 1) AND task_id = $3', [
    info.userId,
    info.localDate,
    info.task.id,
  ]);
}
