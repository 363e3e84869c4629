import type { PoolClient } from '@tasksvc/runtime';
import type { TaskRow } from '../db/tasks.ts';
import { localParts } from './domain/dates.ts';
import { recordActivity } from './domain/streak.ts';
import { streaksOf } from './streak-columns.ts';
import type { OutboxRowValues } from '@tasksvc/runtime';
import { setStreaksAndReadStats } from '../db/achievements.ts';
import { lockProfile, type ProfileRow } from '../db/profiles.ts';
import { completeQuestOf, reopenQuest } from '../db/quests.ts';
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

/** What the tasks service already holds when it calls afterComplete (see completeIn). */
export interface AfterCompleteWith {
  /** the profile, locked by this transaction and read after the completion's coins (else it is locked and read here) */
  profile?: ProfileRow;
  /** the completion's task event, written in the quest's statement (the caller kicks the relay after the commit) */
  event?: { schema: string; row: OutboxRowValues };
}

/**
 * Streaks, quest streak and achievements after a completion (reference §5, §7, §8). Returns the
 * coin balance after it (the completion's coins, and an unlock's rewards), when it knows it.
 */
export async function afterComplete(c: PoolClient, info: CompletionInfo, given: AfterCompleteWith = {}): Promise<{ coins: number | null }> {
  // Lock the profile: two completions at once must not both read the same streak.
  const p = given.profile ?? (await lockProfile(c, info.userId));
  // Today's quest, or yesterday's left undone and caught up today: both count as a quest done today
  // (double_shift), but only today's own quest extends the quest streak. The completion is marked
  // as a quest's in the same statement.
  const done = await completeQuestOf(c, { userId: info.userId, localDate: info.localDate, taskId: info.task.id, at: info.completedAt, completionId: info.completionId }, given.event);
  const isQuest = done.includes(info.localDate);

  const before = streaksOf(p);
  const streak = recordActivity(before.streak, info.localDate, { shield: true }).state;
  const questStreak = isQuest ? recordActivity(before.questStreak, info.localDate, { shield: false }).state : before.questStreak;
  const streaks = {
    streakCurrent: streak.current,
    streakMax: streak.max,
    streakLastDate: streak.lastDate,
    streakShieldUsedMonth: streak.shieldUsedMonth,
    questStreakCurrent: questStreak.current,
    questStreakMax: questStreak.max,
    questStreakLastDate: questStreak.lastDate,
  };
  // the streaks set, then the achievements' figures and today's quests read, in one statement
  const stats = await setStreaksAndReadStats(c, info.userId, info.localDate, streaks);
  if (!stats) return { coins: null };
  const fresh = await unlockAchievements(c, info.userId, { localHour: localParts(info.completedAt, p.timezone).hour, questsCompletedToday: stats.questsToday }, stats);
  // the profile is locked: its balance is the one read plus the rewards just added (never below zero: rewards are positive)
  return { coins: stats.coins + fresh.reduce((n, u) => n + u.reward, 0) };
}

/**
 * After an undo the day's quest is open again. Streaks and achievements stay: a streak counts days
 * with activity as they happened, and unlocks are permanent (reference §7); the coins of the undone
 * completion itself are taken back by the tasks service, exactly as recorded. `given.event`: the
 * undo's task event, written in the quest's statement (the caller kicks the relay after the commit).
 */
export async function afterUndo(c: PoolClient, info: CompletionInfo, given: Pick<AfterCompleteWith, 'event'> = {}): Promise<void> {
  // the undo's task event, when given, goes into the outbox with the quest's statement
  await reopenQuest(c, info.userId, info.localDate, info.task.id, given.event);
}
