import type { Pool, PoolClient } from '@tasksvc/runtime';
import type { WeeklyReview } from './domain/messages.ts';
import { streakAsOf, type StreakState } from './domain/streak.ts';

type Queryable = Pick<Pool | PoolClient, 'query'>;

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
  const args = [reqs.map((r) => r.userId), reqs.map((r) => r.timezone), reqs.map((r) => r.week.start), reqs.map((r) => r.week.end)];
  const D = `unnest($1::uuid[], $2::text[], $3::date[], $4::date[]) AS d(user_id, tz, ws, we)`;
  const [counts, topics] = await Promise.all([
    db.query<{ user_id: string; completions: number; previous: number; task_coins: number; achievement_coins: number; postponements: number; created: number }>(
      `SELECT d.user_id,
              (SELECT count(*)::int FROM tasks.task_completions c WHERE c.user_id = d.user_id AND c.local_date BETWEEN d.ws AND d.we) AS completions,
              (SELECT count(*)::int FROM tasks.task_completions c WHERE c.user_id = d.user_id AND c.local_date BETWEEN d.ws - 7 AND d.ws - 1) AS previous,
              (SELECT COALESCE(sum(c.coins_awarded), 0)::int FROM tasks.task_completions c WHERE c.user_id = d.user_id AND c.local_date BETWEEN d.ws AND d.we) AS task_coins,
              (SELECT COALESCE(sum(a.coins_awarded), 0)::int FROM tasks.user_achievements a WHERE a.user_id = d.user_id AND (a.unlocked_at AT TIME ZONE d.tz)::date BETWEEN d.ws AND d.we) AS achievement_coins,
              (SELECT count(*)::int FROM tasks.quest_postponements q WHERE q.user_id = d.user_id AND q.local_date BETWEEN d.ws AND d.we) AS postponements,
              (SELECT count(*)::int FROM tasks.tasks t WHERE t.user_id = d.user_id AND (t.created_at AT TIME ZONE d.tz)::date BETWEEN d.ws AND d.we) AS created
         FROM ${D}`,
      args,
    ),
    db.query<{ user_id: string; topic_id: string; title: string; completions: number }>(
      `SELECT user_id, topic_id, title, completions FROM (
         SELECT d.user_id, tp.id AS topic_id, tp.title, count(*)::int AS completions,
                row_number() OVER (PARTITION BY d.user_id ORDER BY count(*) DESC, tp.title) AS n
           FROM ${D}
           JOIN tasks.task_completions c ON c.user_id = d.user_id AND c.local_date BETWEEN d.ws AND d.we
           JOIN tasks.tasks t ON t.id = c.task_id
           JOIN tasks.topics tp ON tp.id = t.topic_id
          GROUP BY d.user_id, tp.id, tp.title
       ) x WHERE n <= 3 ORDER BY user_id, n`,
      args,
    ),
  ]);
  const top = new Map<string, WeeklyReview['topTopics']>();
  for (const t of topics.rows) top.set(t.user_id, [...(top.get(t.user_id) ?? []), { topicId: t.topic_id, title: t.title, completions: t.completions }]);
  const byUser = new Map(reqs.map((r) => [r.userId, r]));
  for (const c of counts.rows) {
    const r = byUser.get(c.user_id)!;
    out.set(c.user_id, {
      weekStart: r.week.start,
      weekEnd: r.week.end,
      completions: c.completions,
      previousWeekCompletions: c.previous,
      postponements: c.postponements,
      coinsEarned: c.task_coins + c.achievement_coins,
      streakCurrent: streakAsOf(r.streak, r.today),
      streakMax: r.streak.max,
      tasksCreated: c.created,
      topTopics: top.get(c.user_id) ?? [],
    });
  }
  return out;
}
