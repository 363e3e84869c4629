import type { PoolClient } from '@tasksvc/runtime';
import type { TaskRow } from '../db/tasks.ts';
import { localParts } from './domain/dates.ts';
import { recordActivity } from './domain/streak.ts';
import { streaksOf } from './streak-columns.ts';
import { lockProfile, updateProfile } from '../db/profiles.ts';
import { completeQuest, reopenQuest } from '../db/quests.ts';
import { markQuestCompletion, questsCompletedOn } from '../db/tasks.ts';
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

/** Streaks, quest streak and achievements after a completion (reference §5, §7, §8). */
export async function afterComplete(c: PoolClient, info: CompletionInfo): Promise<void> {
  // Lock the profile: two completions at once must not both read the same streak.
  const p = await lockProfile(c, info.userId);
  // Today's quest, or yesterday's left undone and caught up today: both count as a quest done today
  // (double_shift), but only today's own quest extends the quest streak.
  const done = await completeQuest(c, info.userId, info.localDate, info.task.id, info.completedAt);
  const isQuest = done.includes(info.localDate);
  if (done.length > 0) await markQuestCompletion(c, info.completionId);

  const before = streaksOf(p);
  const streak = recordActivity(before.streak, info.localDate, { shield: true }).state;
  const questStreak = isQuest ? recordActivity(before.questStreak, info.localDate, { shield: false }).state : before.questStreak;
  await updateProfile(c, info.userId, {
    streakCurrent: streak.current,
    streakMax: streak.max,
    streakLastDate: streak.lastDate,
    streakShieldUsedMonth: streak.shieldUsedMonth,
    questStreakCurrent: questStreak.current,
    questStreakMax: questStreak.max,
    questStreakLastDate: questStreak.lastDate,
  });
  await unlockAchievements(c, info.userId, { localHour: localParts(info.completedAt, p.timezone).hour, questsCompletedToday: await questsCompletedOn(c, info.userId, info.localDate) });
}

/**
 * After an undo the day's quest is open again. Streaks and achievements stay: a streak counts days
 * with activity as they happened, and unlocks are permanent (reference §7); the coins of the undone
 * completion itself are taken back by the tasks service, exactly as recorded.
 */
export async function afterUndo(c: PoolClient, info: CompletionInfo): Promise<void> {
  await reopenQuest(c, info.userId, info.localDate, info.task.id);
}
