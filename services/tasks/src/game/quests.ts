import type { Queryable } from '@tasksvc/runtime';
import { insertQuests, questCandidates, questsOn, syncQuestFlags, type QuestRow } from '../db/quests.ts';
import { selectQuest, type Energy, type QuestTier } from './domain/quest.ts';

export { syncQuestFlags, type QuestRow };

/** One user and their local "today". */
export interface UserDay {
  userId: string;
  date: string;
  energy: Energy | null;
}

/**
 * Today's quest for each user, selecting one where there is none yet (reference §3). Set-based:
 * one read of existing quests, one read of candidates, one insert. The (user, date) key makes a
 * concurrent selection (a GET racing the cron, two replicas) keep exactly one quest; the loser's
 * pick is discarded and the winner's returned.
 */
export async function ensureQuests(db: Queryable, days: UserDay[], opts: { random?: () => number; exclude?: Map<string, Set<string>>; rerolledAway?: Map<string, Set<string>> } = {}): Promise<Map<string, QuestRow>> {
  if (days.length === 0) return new Map();
  const have = await questsOn(db, days);
  const missing = days.filter((d) => !have.has(d.userId));
  if (missing.length === 0) return have;

  const pool = await questCandidates(db, missing.map((d) => d.userId));
  const picks: { userId: string; date: string; taskId: string; tier: QuestTier }[] = [];
  for (const d of missing) {
    const pick = selectQuest(pool.get(d.userId) ?? [], { today: d.date, energy: d.energy, random: opts.random ?? Math.random, exclude: opts.exclude?.get(d.userId), rerolledAway: opts.rerolledAway?.get(d.userId) });
    if (pick) picks.push({ userId: d.userId, date: d.date, taskId: pick.taskId, tier: pick.tier });
  }
  if (picks.length > 0) {
    await insertQuests(db, picks);
    await syncQuestFlags(db, picks.map((p) => p.userId));
  }
  return questsOn(db, days);
}
