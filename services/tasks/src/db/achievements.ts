import { names, orm, statement, type Queryable } from '@tasksvc/runtime';
import { count, eq, sql, type SQL } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import { thresholdsOf, type AchievementStats as RuleStats } from '../game/domain/achievements.ts';
import { energyCheckins, profiles, taskCompletions, tasks, topics, userAchievements, wishlistItems } from './schema.ts';

/**
 * What the achievement rules look at, for one user. Completions of subtasks are steps of one task:
 * they count toward no "tasks completed" milestone (their coins would make a task split in ten pay
 * more than the task: docs/tasks.md). The three counts of completions are capped: each stops at the
 * highest threshold of its milestones the user has not unlocked (0 once all are), which decides the
 * rules exactly as the total would (thresholdsOf) and reads no more rows however long the history.
 */
export interface AchievementStats {
  coins: number;
  coinsEarned: number;
  streakMax: number;
  questStreakMax: number;
  /** tasks completed (not subtasks, not imported), capped */
  tasksCapped: number;
  /** completions of a daily quest, capped: 0 or 1 while first_quest is locked, then 0 */
  questsCapped: number;
  topics: number;
  sequential: number;
  /** completed tasks of high priority (as it is now), capped like tasksCapped */
  highCapped: number;
  purchases: number;
  /** local dates of the latest energy check-ins, newest first */
  checkins: string[];
  unlocked: string[];
}

const p = sql.placeholder;
const pr = alias(profiles, 'pr');
const tc = alias(taskCompletions, 'tc');
const t = alias(tasks, 't');
const n = (from: ReturnType<typeof sql>) => sql`(SELECT count(*)::int FROM ${from})`;
/**
 * How many of `rows` there are, up to the highest threshold of `stat` whose achievement the user has
 * not unlocked (capOf, in SQL: the thresholds are the domain's; `u.unlocked`: the user's keys, a
 * lateral of statsOf). The LIMIT ends the scan there.
 */
const capped = (stat: keyof RuleStats, rows: SQL) =>
  sql`(SELECT count(*)::int FROM (SELECT 1 FROM ${rows} LIMIT (
        SELECT coalesce(max(c.n), 0) FROM (VALUES ${sql.join(
          thresholdsOf(stat).map((x) => sql`(${x.key}::text, ${x.atLeast}::int)`),
          sql`, `,
        )}) AS c(key, n) WHERE c.key <> ALL (u.unlocked)
      )) upto)`;
/** a completion that counts as a task completed: not a subtask's step, not imported history */
const counted = sql`NOT ${tc.imported} AND ${tc.subtaskOf} IS NULL`;
/**
 * The figures of the profile `pr` (a table or a CTE with the profile's columns). The completions'
 * counts are capped, each read through a partial index (migration 0114) so that its scan meets only
 * rows it counts: the tasks' stops at its cap, the quests' finds one or none at once. The high-priority
 * one goes from the user's HIGH tasks to their completions (the lateral's OFFSET 0 keeps the tasks the
 * outer side: flattened, the planner hashed all of the user's completions): a priority is the task's
 * as it is now, so no index on the completions can hold it.
 */
const statsOf = (from: SQL, where: SQL = sql``, extra: SQL = sql``) =>
  sql`SELECT ${extra}${pr.coins} AS coins, ${pr.coinsEarned} AS "coinsEarned", ${pr.streakMax} AS "streakMax", ${pr.questStreakMax} AS "questStreakMax",
        ${capped('tasksCompleted', sql`${taskCompletions} tc WHERE ${tc.userId} = ${pr.userId} AND ${counted}`)} AS "tasksCapped",
        ${capped('questsCompleted', sql`${taskCompletions} tc WHERE ${tc.userId} = ${pr.userId} AND ${tc.wasDailyQuest}`)} AS "questsCapped",
        ${n(sql`${topics} WHERE ${topics.userId} = ${pr.userId} AND NOT ${topics.imported}`)} AS topics,
        ${n(sql`${topics} WHERE ${topics.userId} = ${pr.userId} AND NOT ${topics.imported} AND ${topics.sequential}`)} AS sequential,
        ${capped('highPriorityCompleted', sql`${tasks} t CROSS JOIN LATERAL (SELECT FROM ${taskCompletions} tc WHERE ${tc.taskId} = ${t.id} AND ${tc.userId} = ${pr.userId} AND ${counted} OFFSET 0) done WHERE ${t.userId} = ${pr.userId} AND ${t.priority} = 'HIGH'`)} AS "highCapped",
        ${n(sql`${wishlistItems} WHERE ${wishlistItems.userId} = ${pr.userId} AND NOT ${wishlistItems.imported} AND ${wishlistItems.status} = 'BOUGHT'`)} AS purchases,
        ARRAY(SELECT ${energyCheckins.localDate}::text FROM ${energyCheckins} WHERE ${energyCheckins.userId} = ${pr.userId} ORDER BY ${energyCheckins.localDate} DESC LIMIT 31) AS checkins,
        u.unlocked
      FROM ${from}
      -- OFFSET 0: read once, not once per cap that uses it (the planner would inline the ARRAY into each)
      CROSS JOIN LATERAL (SELECT ARRAY(SELECT ${userAchievements.achievementKey} FROM ${userAchievements} WHERE ${userAchievements.userId} = ${pr.userId}) AS unlocked OFFSET 0) u
      ${where}`;
const stats = statement<AchievementStats>(statsOf(sql`${profiles} pr`, sql`WHERE ${pr.userId} = ${p('userId')}`));

const STREAK_COLUMNS = ['streakCurrent', 'streakMax', 'streakLastDate', 'streakShieldUsedMonth', 'questStreakCurrent', 'questStreakMax', 'questStreakLastDate'] as const;
export type StreakUpdate = { [K in (typeof STREAK_COLUMNS)[number]]: (typeof profiles.$inferInsert)[K] };
const streakThenStats = statement<AchievementStats & { questsToday: number }>(
  sql`WITH pr AS (
        UPDATE ${profiles} SET ${sql.join(
          STREAK_COLUMNS.map((k) => sql`${names(profiles[k])} = ${p(k)}`),
          sql`, `,
        )}, ${names(profiles.updatedAt)} = now()
         WHERE ${profiles.userId} = ${p('userId')}
        RETURNING ${names(profiles.userId, profiles.coins, profiles.coinsEarned, profiles.streakMax, profiles.questStreakMax)}
      )
      ${statsOf(
        sql`pr`,
        sql``,
        sql`(SELECT count(*)::int FROM ${taskCompletions} WHERE ${taskCompletions.userId} = ${pr.userId} AND ${taskCompletions.localDate} = ${p('localDate')}::date AND ${taskCompletions.wasDailyQuest}) AS "questsToday", `,
      )}`,
);

/**
 * After a completion, in one statement: the profile's streaks set (updateProfile), the
 * achievements' figures as they are then (achievementStats), and how many quests the user completed
 * on `localDate`. Null without a profile.
 */
export async function setStreaksAndReadStats(db: Queryable, userId: string, localDate: string, streaks: StreakUpdate): Promise<(AchievementStats & { questsToday: number }) | null> {
  return (await streakThenStats.run(db, { userId, localDate, ...streaks })).rows[0] ?? null;
}
/** The user's achievement inputs in one read (null without a profile). */
export async function achievementStats(db: Queryable, userId: string): Promise<AchievementStats | null> {
  return (await stats.run(db, { userId })).rows[0] ?? null;
}

const book = statement<{ key: string; reward: number }>(
  sql`INSERT INTO ${userAchievements} (${names(userAchievements.userId, userAchievements.achievementKey, userAchievements.coinsAwarded)})
      SELECT ${p('userId')}, k, r FROM unnest(${p('keys')}::text[], ${p('rewards')}::int[]) AS u(k, r)
      ON CONFLICT (${names(userAchievements.userId, userAchievements.achievementKey)}) DO NOTHING
      RETURNING ${userAchievements.achievementKey} AS key, ${userAchievements.coinsAwarded} AS reward`,
);

/** Book unlocks idempotently (the key drops one another transaction booked already); returns the new ones. */
export async function bookUnlocks(db: Queryable, userId: string, unlocks: { key: string; reward: number }[]): Promise<{ key: string; reward: number }[]> {
  return (await book.run(db, { userId, keys: unlocks.map((u) => u.key), rewards: unlocks.map((u) => u.reward) })).rows;
}

/** The user's unlocks and when. */
export async function unlockedAchievements(db: Queryable, userId: string): Promise<Map<string, Date>> {
  const rows = await orm(db).select({ key: userAchievements.achievementKey, at: userAchievements.unlockedAt }).from(userAchievements).where(eq(userAchievements.userId, userId));
  return new Map(rows.map((r) => [r.key, r.at]));
}

const recent = statement<{ userId: string; key: string }>(
  sql`SELECT ${userAchievements.userId} AS "userId", ${userAchievements.achievementKey} AS key FROM ${userAchievements}
      WHERE ${userAchievements.userId} = ANY(${p('users')}::uuid[]) AND ${userAchievements.unlockedAt} > ${p('before')}::timestamptz - interval '24 hours' AND ${userAchievements.unlockedAt} <= ${p('before')}::timestamptz
      ORDER BY ${userAchievements.userId}, ${userAchievements.unlockedAt} DESC`,
);

/** Achievements unlocked in the 24 hours before `before`, newest first, per user. */
export async function recentUnlocks(db: Queryable, userIds: string[], before: Date): Promise<Map<string, string[]>> {
  const { rows } = await recent.run(db, { users: userIds, before: before.toISOString() });
  const out = new Map<string, string[]>();
  for (const r of rows) out.set(r.userId, [...(out.get(r.userId) ?? []), r.key]);
  return out;
}

/** How many users unlocked each achievement (the admin page). */
export async function unlockCounts(db: Queryable): Promise<Map<string, number>> {
  const rows = await orm(db).select({ key: userAchievements.achievementKey, users: count() }).from(userAchievements).groupBy(userAchievements.achievementKey);
  return new Map(rows.map((r) => [r.key, r.users]));
}

/** Count of the user's achievements. */
export async function achievementCount(db: Queryable, userId: string): Promise<number> {
  const [row] = await orm(db).select({ n: count() }).from(userAchievements).where(eq(userAchievements.userId, userId));
  return row!.n;
}
