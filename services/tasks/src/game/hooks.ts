import type { PoolClient } from '@tasksvc/runtime';
import type { TaskRow } from '../db/tasks.ts';
import { localParts } from './domain/dates.ts';
import { recordActivity, type StreakState } from './domain/streak.ts';
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

interface GameProfile {
  timezone: string;
  streak_current: number;
  streak_max: number;
  streak_last_date: string | null;
  streak_shield_used_month: string | null;
  quest_streak_current: number;
  quest_streak_max: number;
  quest_streak_last_date: string | null;
}

/** Streaks, quest streak and achievements after a completion (reference §5, §7, §8). */
export async function afterComplete(c: PoolClient, info: CompletionInfo): Promise<void> {
  // Lock the profile: two completions at once must not both read the same streak.
  const { rows } = await c.query<GameProfile>(
    `SELECT timezone, streak_current, streak_max, streak_last_date::text, streak_shield_used_month,
            quest_streak_current, quest_streak_max, quest_streak_last_date::text
       FROM tasks.profiles WHERE user_id = $1 FOR UPDATE`,
    [info.userId],
  );
  const p = rows[0];
  if (!p) return;
  const quest = await c.query(
    `UPDATE tasks.daily_quests SET completed_at = $4 WHERE user_id = $1 AND local_date = $2 AND task_id = $3 AND completed_at IS NULL RETURNING 1`,
    [info.userId, info.localDate, info.task.id, info.completedAt],
  );
  const isQuest = (quest.rowCount ?? 0) > 0;
  if (isQuest) await c.query('UPDATE tasks.task_completions SET was_daily_quest = true WHERE id = $1', [info.completionId]);

  const streak = recordActivity(
    { current: p.streak_current, max: p.streak_max, lastDate: p.streak_last_date, shieldUsedMonth: p.streak_shield_used_month },
    info.localDate,
    { shield: true },
  ).state;
  const questBefore: StreakState = { current: p.quest_streak_current, max: p.quest_streak_max, lastDate: p.quest_streak_last_date, shieldUsedMonth: null };
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
  await c.query('UPDATE tasks.daily_quests SET completed_at = NULL WHERE user_id = $1 AND local_date = $2 AND task_id = $3', [info.userId, info.localDate, info.task.id]);
}
