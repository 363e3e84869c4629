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

/**
 * Open tasks of many users with what quest selection needs, in one query. Each user's tasks are
 * read through the index on tasks.user_id: the LATERAL slice is kept from being flattened into a
 * join (`OFFSET 0`), which the planner hashed over the whole tasks table for every cron page of
 * 2,000 users, a cost that grew with the table rather than with the page.
 */
async function candidates(db: Queryable, userIds: string[]): Promise<Map<string, QuestCandidate[]>> {
  const { rows } = await db.query<QuestCandidate & { userId: string }>(
    `SELECT t.user_id AS "userId", t.id, t.type, t.priority, t.topic_id AS "topicId", COALESCE(tp.sequential, false) AS "topicSequential",
            t.due_date::text AS "dueDate", t.next_due_date::text AS "nextDueDate", t.completed_at IS NOT NULL AS completed,
            t.snoozed_until::text AS "snoozedUntil", t.paused_at::text AS "pausedAt", t.paused_until::text AS "pausedUntil",
            t.energy_level AS "energyLevel", t.sort_order AS "sortOrder", t.created_at::text AS "createdAt"
       FROM unnest($1::uuid[]) AS u(user_id)
       CROSS JOIN LATERAL (
         SELECT t.* FROM tasks.tasks t WHERE t.user_id = u.user_id AND (t.type = 'RECURRING' OR t.completed_at IS NULL) OFFSET 0
       ) t
       LEFT JOIN tasks.topics tp ON tp.id = t.topic_id
      WHERE tp.archived IS NOT TRUE`,
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
    // per user by primary key (LATERAL + LIMIT: never a hash of the whole daily_quests or tasks table)
    const { rows } = await db.query<QuestRow>(
      `SELECT x.* FROM unnest($1::uuid[], $2::date[]) AS d(user_id, local_date)
         CROSS JOIN LATERAL (
           SELECT ${QUEST_COLS} FROM tasks.daily_quests q JOIN tasks.tasks t ON t.id = q.task_id
            WHERE q.user_id = d.user_id AND q.local_date = d.local_date LIMIT 1
         ) x`,
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
  // Per user (LATERAL slices through the indexes on user_id, as in `candidates`): the latest quest,
  // then the user's tasks that are flagged or are that quest, with the flags they should have; only
  // those that differ are updated, by primary key.
  await db.query(
    `WITH latest AS (
       SELECT u.user_id, l.task_id, l.local_date
         FROM unnest($1::uuid[]) AS u(user_id)
         LEFT JOIN LATERAL (
           SELECT q.task_id, q.local_date FROM tasks.daily_quests q WHERE q.user_id = u.user_id ORDER BY q.local_date DESC LIMIT 1
         ) l ON true
     ), want AS (
       SELECT x.id, COALESCE(x.id = l.task_id, false) AS flag, CASE WHEN x.id = l.task_id THEN l.local_date END AS quest_date
         FROM latest l
         CROSS JOIN LATERAL (
           SELECT t.id FROM tasks.tasks t
            WHERE t.user_id = l.user_id AND (t.is_daily_quest OR t.id = l.task_id) OFFSET 0
         ) x
     )
     UPDATE tasks.tasks t SET is_daily_quest = w.flag, daily_quest_date = w.quest_date
       FROM want w
      WHERE t.id = w.id AND (t.is_daily_quest IS DISTINCT FROM w.flag OR t.daily_quest_date IS DISTINCT FROM w.quest_date)`,
    [userIds],
  );
}
