import { notificationRequested } from '@tasksvc/proto';
import { enqueueEvent, type PoolClient } from '@tasksvc/runtime';
import { ACHIEVEMENT_BY_KEY, evaluateAchievements, type CompletionContext, type Unlock } from './domain/achievements.ts';
import { achievementDraft } from './domain/messages.ts';
import { consecutiveDays } from './domain/streak.ts';

/** The game's own outbox schema (see migration 0100_game.sql). */
export const GAME_OUTBOX_SCHEMA = 'tasks_game';

/**
 * Evaluate and book the user's new achievements inside the caller's transaction: one stats read,
 * an idempotent insert (the primary key drops an unlock another transaction already booked), the
 * rewards added to the balance, and an `achievement` notification per new unlock.
 * `ctx` null is a retroactive grant (no secret achievements).
 */
export async function unlockAchievements(c: PoolClient, userId: string, ctx: CompletionContext | null): Promise<Unlock[]> {
  const { rows } = await c.query<{
    coins: number;
    streak_max: number;
    quest_streak_max: number;
    tasks_completed: number;
    quests_completed: number;
    topics: number;
    sequential: number;
    high: number;
    purchases: number;
    checkins: string[];
    unlocked: string[];
  }>(
    `SELECT p.coins, p.streak_max, p.quest_streak_max,
            (SELECT count(*)::int FROM tasks.task_completions WHERE user_id = p.user_id) AS tasks_completed,
            (SELECT count(*)::int FROM tasks.task_completions WHERE user_id = p.user_id AND was_daily_quest) AS quests_completed,
            (SELECT count(*)::int FROM tasks.topics WHERE user_id = p.user_id) AS topics,
            (SELECT count(*)::int FROM tasks.topics WHERE user_id = p.user_id AND sequential) AS sequential,
            (SELECT count(*)::int FROM tasks.task_completions tc JOIN tasks.tasks t ON t.id = tc.task_id WHERE tc.user_id = p.user_id AND t.priority = 'HIGH') AS high,
            (SELECT count(*)::int FROM tasks.wishlist_items WHERE user_id = p.user_id AND status = 'BOUGHT') AS purchases,
            ARRAY(SELECT local_date::text FROM tasks.energy_checkins WHERE user_id = p.user_id ORDER BY local_date DESC LIMIT 31) AS checkins,
            ARRAY(SELECT achievement_key FROM tasks.user_achievements WHERE user_id = p.user_id) AS unlocked
       FROM tasks.profiles p WHERE p.user_id = $1`,
    [userId],
  );
  const s = rows[0];
  if (!s) return [];
  const candidates = evaluateAchievements(
    {
      tasksCompleted: s.tasks_completed,
      streakMax: s.streak_max,
      coins: s.coins,
      questStreakMax: s.quest_streak_max,
      questsCompleted: s.quests_completed,
      topicsCreated: s.topics,
      sequentialTopics: s.sequential,
      highPriorityCompleted: s.high,
      wishlistPurchases: s.purchases,
      // the run of daily check-ins that ends with the latest one
      energyCheckinStreak: s.checkins.length > 0 ? consecutiveDays(s.checkins, s.checkins[0]!) : 0,
    },
    new Set(s.unlocked),
    ctx,
  );
  if (candidates.length === 0) return [];
  const inserted = await c.query<{ achievement_key: string; coins_awarded: number }>(
    `INSERT INTO tasks.user_achievements (user_id, achievement_key, coins_awarded)
     SELECT $1, k, r FROM unnest($2::text[], $3::int[]) AS u(k, r)
     ON CONFLICT (user_id, achievement_key) DO NOTHING RETURNING achievement_key, coins_awarded`,
    [userId, candidates.map((u) => u.key), candidates.map((u) => u.reward)],
  );
  const fresh = inserted.rows.map((r) => ({ key: r.achievement_key, reward: r.coins_awarded }));
  const total = fresh.reduce((n, u) => n + u.reward, 0);
  if (total > 0) await c.query('UPDATE tasks.profiles SET coins = coins + $2, updated_at = now() WHERE user_id = $1', [userId, total]);
  for (const u of fresh) {
    const def = ACHIEVEMENT_BY_KEY.get(u.key)!;
    await enqueueEvent(c, GAME_OUTBOX_SCHEMA, notificationRequested, { userId, ...achievementDraft(userId, u.key, def.title, u.reward) });
  }
  return fresh;
}
