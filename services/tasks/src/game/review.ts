import type { Queryable } from '@tasksvc/runtime';
import { weekFigures } from '../db/reports.ts';
import type { WeeklyReview } from './domain/messages.ts';
import { streakAsOf, type StreakState } from './domain/streak.ts';

export interface ReviewRequest {
  userId: string;
  timezone: string;
  /** Monday–Sunday in the user's timezone */
  week: { start: string; end: string };
  streak: StreakState;
  /** the user's local today: the streak is reported as of today (0 once lapsed), whatever week is reviewed */
  today: string;
}

/**
 * Weekly reviews for many users at once (reference §9): completions (with last week's), quest
 * postponements, coins earned (tasks and achievements), streak, tasks created, top 3 topics.
 * Local dates throughout; instants (created_at, unlocked_at) are converted with the user's zone.
 */
export async function weeklyReviews(db: Queryable, reqs: ReviewRequest[]): Promise<Map<string, WeeklyReview>> {
  const out = new Map<string, WeeklyReview>();
  if (reqs.length === 0) return out;
  const { counts, topics } = await weekFigures(db, reqs.map((r) => ({ userId: r.userId, timezone: r.timezone, start: r.week.start, end: r.week.end })));
  const top = new Map<string, WeeklyReview['topTopics']>();
  for (const { userId, ...t } of topics) top.set(userId, [...(top.get(userId) ?? []), t]);
  const byUser = new Map(reqs.map((r) => [r.userId, r]));
  for (const c of counts) {
    const r = byUser.get(c.userId)!;
    out.set(c.userId, {
      weekStart: r.week.start,
      weekEnd: r.week.end,
      completions: c.completions,
      previousWeekCompletions: c.previous,
      postponements: c.postponements,
      coinsEarned: c.taskCoins + c.achievementCoins,
      streakCurrent: streakAsOf(r.streak, r.today),
      streakMax: r.streak.max,
      tasksCreated: c.created,
      topTopics: top.get(c.userId) ?? [],
    });
  }
  return out;
}
