import type { PoolClient } from '@tasksvc/runtime';
import { selectQuest, type Energy, type QuestCandidate, type QuestTier } from './domain/quest.ts';

type Queryable = Pick<PoolClient, 'query'>;

/** One user and their local "today". */
export interface UserDay {
  userId: string;
  date: string;
  energy: Energy | null;
}

export interface QuestRow {
  user_id: string;
  task_id: string;
  title: string;
  tier: QuestTier;
  local_date: string;
  completed_at: Date | null;
}

const QUEST_COLS = `q.user_id, q.task_id, t.title, q.tier, q.local_date::text, q.completed_at`;

/** Open tasks of many users with what quest selection needs, in one query. */
async function candidates(db: Queryable, userIds: string[]): Promise<Map<string, QuestCandidate[]>> {
  const { rows } = await db.query<QuestCandidate & { userId: string }>(
    `SELECT t.user_id AS "userId", t.id, t.type, t.priority, t.topic_id AS "topicId", COALESCE(tp.sequential, false) AS "topicSequential",
            t.due_date::text AS "dueDate", t.next_due_date::text AS "nextDueDate", t.completed_at IS NOT NULL AS completed,
            t.snoozed_until::text AS "snoozedUntil", t.paused_at::text AS "pausedAt", t.paused_until::text AS "pausedUntil",
            t.energy_level AS "energyLevel", t.sort_order AS "sortOrder", t.created_at::text AS "createdAt"
       FROM tasks.tasks t LEFT JOIN tasks.topics tp ON tp.id = t.topic_id
      WHERE t.user_id = ANY($1::uuid[]) AND (t.type = 'RECURRING' OR t.completed_at IS NULL) AND tp.archived IS NOT TRUE`,
    [userIds],
  );
  const out = new Map<string, QuestCandidate[]>();
  for (const r of rows) {
    const list = out.get(r.userId) ?? [];
    list.push(r);
    out.set(r.userId, list);
  }
  return out;
}

/**
 * Today's quest for each user, selecting one where there is none yet (reference §3). Set-based:
 * one read of existing quests, one read of candidates, one insert. The (user, date) key makes a
 * concurrent selection (a GET racing the cron, two replicas) keep exactly one quest; the loser's
 * pick is discarded and the winner's returned.
 */
export async function ensureQuests(db: Queryable, days: UserDay[], opts: { random?: () => number; exclude?: Map<string, Set<string>> } = {}): Promise<Map<string, QuestRow>> {
  if (days.length === 0) return new Map();
  const ids = days.map((d) => d.userId);
  const dates = days.map((d) => d.date);
  const existing = async () => {
    const { rows } = await db.query<QuestRow>(
      `SELECT ${QUEST_COLS} FROM unnest($1::uuid[], $2::date[]) AS d(user_id, local_date)
         JOIN tasks.daily_quests q ON q.user_id = d.user_id AND q.local_date = d.local_date
         JOIN tasks.tasks t ON t.id = q.task_id`,
      [ids, dates],
    );
    return new Map(rows.map((r) => [r.user_id, r]));
  };
  const have = await existing();
  const missing = days.filter((d) => !have.has(d.userId));
  if (missing.length === 0) return have;

  const pool = await candidates(db, missing.map((d) => d.userId));
  const picks: { userId: string; date: string; taskId: string; tier: QuestTier }[] = [];
  for (const d of missing) {
    const pick = selectQuest(pool.get(d.userId) ?? [], { today: d.date, energy: d.energy, random: opts.random ?? Math.random, exclude: opts.exclude?.get(d.userId) });
    if (pick) picks.push({ userId: d.userId, date: d.date, taskId: pick.taskId, tier: pick.tier });
  }
  if (picks.length > 0) {
    await db.query(
      `INSERT INTO tasks.daily_quests (user_id, local_date, task_id, tier)
       SELECT * FROM unnest($1::uuid[], $2::date[], $3::uuid[], $4::text[]) ON CONFLICT (user_id, local_date) DO NOTHING`,
      [picks.map((p) => p.userId), picks.map((p) => p.date), picks.map((p) => p.taskId), picks.map((p) => p.tier)],
    );
    await syncQuestFlags(db, picks.map((p) => p.userId));
  }
  return existing();
}

/**
 * Keep the tasks' `is_daily_quest` / `daily_quest_date` (shown by the task API) equal to the
 * daily_quests table: exactly the latest quest of each user is flagged.
 */
export async function syncQuestFlags(db: Queryable, userIds: string[]): Promise<void> {
  await db.query(
    `WITH latest AS (
       SELECT DISTINCT ON (user_id) user_id, task_id, local_date FROM tasks.daily_quests
        WHERE user_id = ANY($1::uuid[]) ORDER BY user_id, local_date DESC
     )
     UPDATE tasks.tasks t
        SET is_daily_quest = (l.task_id IS NOT NULL), daily_quest_date = l.local_date
       FROM tasks.tasks t2 LEFT JOIN latest l ON l.task_id = t2.id
      WHERE t.id = t2.id AND t2.user_id = ANY($1::uuid[]) AND (t2.is_daily_quest OR l.task_id IS NOT NULL)
        AND (t.is_daily_quest IS DISTINCT FROM (l.task_id IS NOT NULL) OR t.daily_quest_date IS DISTINCT FROM l.local_date)`,
    [userIds],
  );
}
