import { names, orm, selectList, statement, type OutboxRowValues, type Queryable, type Statement } from '@tasksvc/runtime';
import { and, count, desc, eq, isNotNull, isNull, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import type { QuestCandidate, QuestTier } from '../game/domain/quest.ts';
import { dailyQuests, questPostponements, taskCompletions, tasks, topics } from './schema.ts';

/**
 * The daily quest's SQL: quests (one per user and local day), the candidates selection picks from,
 * the quest flags on tasks, and postponements. Quest work is set-based (many users at once for the
 * cron), so those statements are templates rendered once.
 */

const p = sql.placeholder;
const q = alias(dailyQuests, 'q');
const t = alias(tasks, 't');
const tp = alias(topics, 'tp');

export interface QuestRow {
  userId: string;
  taskId: string;
  title: string;
  tier: QuestTier;
  localDate: string;
  completedAt: Date | null;
}

const questFields = { userId: q.userId, taskId: q.taskId, title: t.title, tier: sql<QuestTier>`${q.tier}`, localDate: q.localDate, completedAt: q.completedAt };
// per user by primary key (LATERAL + LIMIT: never a hash of the whole daily_quests or tasks table)
const existing = statement(
  sql`SELECT x.* FROM unnest(${p('users')}::uuid[], ${p('dates')}::date[]) AS d(user_id, local_date)
        CROSS JOIN LATERAL (
          SELECT ${selectList(questFields)} FROM ${dailyQuests} q JOIN ${tasks} t ON ${t.id} = ${q.taskId}
           WHERE ${q.userId} = d.user_id AND ${q.localDate} = d.local_date LIMIT 1
        ) x`,
  questFields,
);

/** The quests these users have on these days (one day per user). */
export async function questsOn(db: Queryable, days: { userId: string; date: string }[]): Promise<Map<string, QuestRow>> {
  const { rows } = await existing.run(db, { users: days.map((d) => d.userId), dates: days.map((d) => d.date) });
  return new Map(rows.map((r) => [r.userId, r]));
}

const candidateFields = {
  userId: t.userId,
  id: t.id,
  type: t.type,
  priority: t.priority,
  topicId: t.topicId,
  parentId: t.parentId,
  topicSequential: sql<boolean>`COALESCE(${tp.sequential}, false)`,
  dueDate: t.dueDate,
  nextDueDate: t.nextDueDate,
  completed: sql<boolean>`${t.completedAt} IS NOT NULL`,
  snoozedUntil: t.snoozedUntil,
  pausedAt: sql<string | null>`${t.pausedAt}::text`,
  pausedUntil: t.pausedUntil,
  energyLevel: t.energyLevel,
  sortOrder: t.sortOrder,
  createdAt: sql<string>`${t.createdAt}::text`,
};
const candidates = statement(
  sql`SELECT ${selectList(candidateFields)} FROM unnest(${p('users')}::uuid[]) AS u(user_id)
      CROSS JOIN LATERAL (
        SELECT t.* FROM ${tasks} t WHERE ${t.userId} = u.user_id AND (${t.type} = 'RECURRING' OR ${t.completedAt} IS NULL) OFFSET 0
      ) t
      LEFT JOIN ${topics} tp ON ${tp.id} = ${t.topicId}
      WHERE ${tp.archived} IS NOT TRUE`,
  candidateFields,
);

/**
 * Open tasks of many users with what quest selection needs, in one query. Each user's tasks are
 * read through the index on tasks.user_id: the LATERAL slice is kept from being flattened into a
 * join (`OFFSET 0`), which the planner hashed over the whole tasks table for every cron page of
 * 2,000 users, a cost that grew with the table rather than with the page.
 */
export async function questCandidates(db: Queryable, userIds: string[]): Promise<Map<string, QuestCandidate[]>> {
  const { rows } = await candidates.run(db, { users: userIds });
  const out = new Map<string, QuestCandidate[]>();
  for (const { userId, ...c } of rows) {
    const list = out.get(userId) ?? [];
    list.push(c);
    out.set(userId, list);
  }
  return out;
}

const insertPicks = statement(
  sql`INSERT INTO ${dailyQuests} (${names(dailyQuests.userId, dailyQuests.localDate, dailyQuests.taskId, dailyQuests.tier)})
      SELECT * FROM unnest(${p('users')}::uuid[], ${p('dates')}::date[], ${p('tasks')}::uuid[], ${p('tiers')}::text[])
      ON CONFLICT (${names(dailyQuests.userId, dailyQuests.localDate)}) DO NOTHING`,
);

/** Record picks; a (user, day) that has a quest already keeps it (a concurrent selection won). */
export async function insertQuests(db: Queryable, picks: { userId: string; date: string; taskId: string; tier: QuestTier }[]): Promise<void> {
  await insertPicks.run(db, { users: picks.map((x) => x.userId), dates: picks.map((x) => x.date), tasks: picks.map((x) => x.taskId), tiers: picks.map((x) => x.tier) });
}

// Per user (LATERAL slices through the indexes on user_id, as in `candidates`): the latest quest, then
// the user's tasks that are flagged or are that quest, with the flags they should have; only those
// that differ are updated, by primary key.
const sync = statement(
  sql`WITH latest AS (
        SELECT u.user_id, l.task_id, l.local_date
          FROM unnest(${p('users')}::uuid[]) AS u(user_id)
          LEFT JOIN LATERAL (
            SELECT ${q.taskId} AS task_id, ${q.localDate} AS local_date FROM ${dailyQuests} q WHERE ${q.userId} = u.user_id ORDER BY ${q.localDate} DESC LIMIT 1
          ) l ON true
      ), want AS (
        SELECT x.id, COALESCE(x.id = l.task_id, false) AS flag, CASE WHEN x.id = l.task_id THEN l.local_date END AS quest_date
          FROM latest l
          CROSS JOIN LATERAL (
            SELECT ${t.id} AS id FROM ${tasks} t
             WHERE ${t.userId} = l.user_id AND (${t.isDailyQuest} OR ${t.id} = l.task_id) OFFSET 0
          ) x
      )
      UPDATE ${tasks} t SET ${names(tasks.isDailyQuest)} = w.flag, ${names(tasks.dailyQuestDate)} = w.quest_date
        FROM want w
       WHERE ${t.id} = w.id AND (${t.isDailyQuest} IS DISTINCT FROM w.flag OR ${t.dailyQuestDate} IS DISTINCT FROM w.quest_date)`,
);

/**
 * Keep the tasks' `isDailyQuest` / `dailyQuestDate` (shown by the task API) equal to the
 * daily_quests table: exactly the latest quest of each user is flagged.
 */
export async function syncQuestFlags(db: Queryable, userIds: string[]): Promise<void> {
  await sync.run(db, { users: userIds });
}

const today = (userId: string, localDate: string) => and(eq(dailyQuests.userId, userId), eq(dailyQuests.localDate, localDate));

/** The day's quest, if it is completed: whether it is. */
export async function questCompleted(db: Queryable, userId: string, localDate: string): Promise<boolean> {
  const rows = await orm(db)
    .select({ completedAt: dailyQuests.completedAt })
    .from(dailyQuests)
    .where(and(today(userId, localDate), isNotNull(dailyQuests.completedAt)));
  return rows.length > 0;
}

/** Drop the day's quest (a re-roll or a postpone); returns its task, if there was one. */
export async function dropQuest(db: Queryable, userId: string, localDate: string): Promise<{ taskId: string; rerolledAway: string[] } | undefined> {
  const [row] = await orm(db).delete(dailyQuests).where(today(userId, localDate)).returning({ taskId: dailyQuests.taskId, rerolledAway: dailyQuests.rerolledAway });
  return row;
}

/** Record the tasks re-rolled away from today on the day's (new) quest. */
export async function setRerolledAway(db: Queryable, userId: string, localDate: string, taskIds: string[]): Promise<void> {
  await orm(db).update(dailyQuests).set({ rerolledAway: taskIds }).where(today(userId, localDate));
}

/** Make `taskId` the day's quest again (a restore), open. */
export async function restoreQuest(db: Queryable, userId: string, localDate: string, taskId: string): Promise<void> {
  await orm(db)
    .insert(dailyQuests)
    .values({ userId, localDate, taskId, tier: 'restored' })
    .onConflictDoUpdate({ target: [dailyQuests.userId, dailyQuests.localDate], set: { taskId, tier: 'restored', completedAt: null, createdAt: sql`now()` } });
}

/** `o AS (…)`: a task event's outbox row (in `outboxSchema`) written by a quest statement before its own change; none without a schema. */
const outboxFirst = (outboxSchema: string | null) =>
  outboxSchema
    ? sql`o AS (
        INSERT INTO ${sql.identifier(outboxSchema)}.outbox (id, subject, payload, traceparent) VALUES (${p('outboxId')}::uuid, ${p('subject')}, ${p('payload')}::jsonb, ${p('traceparent')})
      )`
    : undefined;
/** outboxFirst's parameters for `event` (none without one). */
const outboxParams = (event?: { row: OutboxRowValues }) =>
  event ? { outboxId: event.row.id, subject: event.row.subject, payload: event.row.payload, traceparent: event.row.traceparent } : {};

const questDone = new Map<string, Statement<{ localDate: string }>>();
/** The quest of `localDate` or of the day before (caught up today) completed by `taskId`, and that completion marked as the quest's, in one statement; with a task event's outbox row (in `schema`) written first when given. */
function questDoneStatement(outboxSchema: string | null) {
  const key = outboxSchema ?? '';
  let s = questDone.get(key);
  if (!s) {
    const o = outboxFirst(outboxSchema);
    s = statement<{ localDate: string }>(
      sql`WITH ${o ? sql`${o}, ` : sql``}q AS (
            UPDATE ${dailyQuests} SET ${names(dailyQuests.completedAt)} = ${p('at')}::timestamptz
             WHERE ${dailyQuests.userId} = ${p('userId')} AND ${dailyQuests.localDate} IN (${p('localDate')}::date, ${p('localDate')}::date - 1)
               AND ${dailyQuests.taskId} = ${p('taskId')} AND ${dailyQuests.completedAt} IS NULL
            RETURNING ${dailyQuests.localDate}
          ), m AS (
            UPDATE ${taskCompletions} SET ${names(taskCompletions.wasDailyQuest)} = true WHERE ${taskCompletions.id} = ${p('completionId')} AND EXISTS (SELECT 1 FROM q)
          )
          SELECT local_date::text AS "localDate" FROM q`,
    );
    questDone.set(key, s);
  }
  return s;
}

/**
 * Complete the quest `done.taskId` was (today's or yesterday's) and mark its completion as the quest's, in one statement; `event`: a
 * task event's outbox row to write in it first (the caller kicks the relay after the commit).
 */
export async function completeQuestOf(
  db: Queryable,
  done: { userId: string; localDate: string; taskId: string; at: Date; completionId: string },
  event?: { schema: string; row: OutboxRowValues },
): Promise<string[]> {
  const values = { userId: done.userId, localDate: done.localDate, taskId: done.taskId, at: done.at.toISOString(), completionId: done.completionId, ...outboxParams(event) };
  const { rows } = await questDoneStatement(event?.schema ?? null).run(db, values);
  return rows.map((r) => r.localDate);
}

const questReopen = new Map<string, Statement>();
/** The quest `taskId` completed (of `localDate` or the day before) open again; with a task event's outbox row (in `schema`) written first when given. */
function questReopenStatement(outboxSchema: string | null) {
  const key = outboxSchema ?? '';
  let s = questReopen.get(key);
  if (!s) {
    const reopen = sql`UPDATE ${dailyQuests} SET ${names(dailyQuests.completedAt)} = NULL
         WHERE ${dailyQuests.userId} = ${p('userId')} AND ${dailyQuests.localDate} IN (${p('localDate')}::date, ${p('localDate')}::date - 1) AND ${dailyQuests.taskId} = ${p('taskId')}`;
    const o = outboxFirst(outboxSchema);
    s = statement(o ? sql`WITH ${o} ${reopen}` : reopen);
    questReopen.set(key, s);
  }
  return s;
}

/**
 * After an undo: the quest of that day (or the day before) is open again; `event`: a task event's
 * outbox row to write in the same statement first (the caller kicks the relay after the commit).
 */
export async function reopenQuest(db: Queryable, userId: string, localDate: string, taskId: string, event?: { schema: string; row: OutboxRowValues }): Promise<void> {
  await questReopenStatement(event?.schema ?? null).run(db, { userId, localDate, taskId, ...outboxParams(event) });
}

// ─── postponements ─────────────────────────────────────────────────────────────────────────

/** Postponements of `localDate` that still count against the daily limit (restored ones do not). */
export async function postponesOn(db: Queryable, userId: string, localDate: string): Promise<number> {
  const [row] = await orm(db)
    .select({ n: count() })
    .from(questPostponements)
    .where(and(eq(questPostponements.userId, userId), eq(questPostponements.localDate, localDate), isNull(questPostponements.restoredAt)));
  return row!.n;
}

export async function recordPostponement(db: Queryable, row: Pick<typeof questPostponements.$inferInsert, 'userId' | 'taskId' | 'localDate' | 'previousDueDate' | 'previousSnoozedUntil' | 'via'>): Promise<void> {
  await orm(db).insert(questPostponements).values(row);
}

/** Today's latest postponement through the quest that is not restored yet. */
export async function lastQuestPostponement(db: Queryable, userId: string, localDate: string) {
  const [row] = await orm(db)
    .select({ id: questPostponements.id, taskId: questPostponements.taskId, previousDueDate: questPostponements.previousDueDate, previousSnoozedUntil: questPostponements.previousSnoozedUntil })
    .from(questPostponements)
    .where(and(eq(questPostponements.userId, userId), eq(questPostponements.localDate, localDate), isNull(questPostponements.restoredAt), eq(questPostponements.via, 'quest')))
    .orderBy(desc(questPostponements.createdAt))
    .limit(1);
  return row ?? null;
}

export async function markRestored(db: Queryable, id: string): Promise<void> {
  await orm(db).update(questPostponements).set({ restoredAt: sql`now()` }).where(eq(questPostponements.id, id));
}
