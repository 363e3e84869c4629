import { notificationRequested } from '@tasksvc/proto';
import { enqueueEvent, type Queryable } from '@tasksvc/runtime';
import { achievementStats, bookUnlocks, type AchievementStats } from '../db/achievements.ts';
import { addCoins } from '../db/profiles.ts';
import { ACHIEVEMENT_BY_KEY, evaluateAchievements, type CompletionContext, type Unlock } from './domain/achievements.ts';
import { achievementDraft } from './domain/messages.ts';
import { consecutiveDays } from './domain/streak.ts';

/** The game's own outbox schema (see migration 0100_game.sql). */
export const GAME_OUTBOX_SCHEMA = 'tasks_game';

/**
 * Evaluate and book the user's new achievements inside the caller's transaction: one stats read,
 * an idempotent insert (the primary key drops an unlock another transaction already booked), the
 * rewards added to the balance, and an `achievement` notification per new unlock.
 * `ctx` null is a retroactive grant (no secret achievements). `read`: the stats, when the caller read them
 * already (setStreaksAndReadStats).
 */
export async function unlockAchievements(c: Queryable, userId: string, ctx: CompletionContext | null, read?: AchievementStats): Promise<Unlock[]> {
  const s = read ?? (await achievementStats(c, userId));
  if (!s) return [];
  const candidates = evaluateAchievements(
    {
      tasksCompleted: s.tasksCapped,
      streakMax: s.streakMax,
      coins: s.coins,
      coinsEarned: s.coinsEarned,
      questStreakMax: s.questStreakMax,
      questsCompleted: s.questsCapped,
      topicsCreated: s.topics,
      sequentialTopics: s.sequential,
      highPriorityCompleted: s.highCapped,
      wishlistPurchases: s.purchases,
      // the run of daily check-ins that ends with the latest one
      energyCheckinStreak: s.checkins.length > 0 ? consecutiveDays(s.checkins, s.checkins[0]!) : 0,
    },
    new Set(s.unlocked),
    ctx,
  );
  if (candidates.length === 0) return [];
  const fresh = await bookUnlocks(c, userId, candidates);
  const total = fresh.reduce((n, u) => n + u.reward, 0);
  if (total > 0) await addCoins(c, userId, total);
  for (const u of fresh) {
    const def = ACHIEVEMENT_BY_KEY.get(u.key)!;
    await enqueueEvent(c, GAME_OUTBOX_SCHEMA, notificationRequested, { userId, ...achievementDraft(userId, u.key, def.title, u.reward) });
  }
  return fresh;
}
