import type { CronJob } from '@tasksvc/proto';
import { orm, selectList, statement, StatementCache, type Queryable } from '@tasksvc/runtime';
import { count, desc, eq, sql, type SQL } from 'drizzle-orm';
import { alias, type PgColumn } from 'drizzle-orm/pg-core';
import type { Energy } from '../game/domain/quest.ts';
import type { StreakColumns } from './profiles.ts';
import { JOB_SETTINGS, profiles, questPostponements, taskCompletions, tasks, topics, userAchievements } from './schema.ts';

/**
 * Reads across many users or many rows: the cron's reminder collection, weekly reviews, the game's
 * statistics and the admin page's aggregates. Set-based statements, rendered once.
 */

const p = sql.placeholder;
const pr = alias(profiles, 'p');
const t = alias(tasks, 't');
const c = alias(taskCompletions, 'c');
const tp = alias(topics, 'tp');

/** The profile columns behind both streaks and the vacation (of profiles `p`). */
const streakFields = {
  streakCurrent: pr.streakCurrent,
  streakMax: pr.streakMax,
  streakLastDate: pr.streakLastDate,
  streakShieldUsedMonth: pr.streakShieldUsedMonth,
  questStreakCurrent: pr.questStreakCurrent,
  questStreakMax: pr.questStreakMax,
  questStreakLastDate: pr.questStreakLastDate,
  vacationStartDate: pr.vacationStartDate,
  vacationEndDate: pr.vacationEndDate,
} satisfies Record<keyof StreakColumns, PgColumn>;

/** The user (profiles `p`) is on vacation on the date expression `d`. */
const onVacation = (d: SQL) =>
  sql`((${pr.vacationStartDate} IS NOT NULL OR ${pr.vacationEndDate} IS NOT NULL) AND COALESCE(${pr.vacationStartDate}, '-infinity'::date) <= ${d} AND COALESCE(${pr.vacationEndDate}, 'infinity'::date) >= ${d})`;

// ─── reminder collection ──────────────────────────────────────────────────────────────────

/** A job's switch and local time, as columns of profiles `p`. */
const setting = (job: CronJob) => ({ enabled: pr[JOB_SETTINGS[job].enabled], time: pr[JOB_SETTINGS[job].time] });

/** While the morning briefing is on it replaces the quest, due, overdue, recurring and streak notifications (reference §9), not the weekly review. */
const REPLACED_BY_BRIEFING = new Set<CronJob>(['daily-quest', 'due-today', 'overdue', 'recurring-due', 'streak-reminder']);

const zoneStatements = new StatementCache<{ tz: string }>();

/**
 * The zones of the users who have `job` on: a skip scan over the job's due index (one index probe
 * per distinct zone) rather than a read of every profile.
 */
export async function zonesWith(db: Queryable, job: CronJob): Promise<string[]> {
  const zones = zoneStatements.get(job, () => {
    const { enabled } = setting(job);
    return statement(
      sql`WITH RECURSIVE z(tz) AS (
            SELECT min(${pr.timezone}) FROM ${profiles} p WHERE ${enabled}
            UNION ALL
            SELECT (SELECT min(${pr.timezone}) FROM ${profiles} p WHERE ${enabled} AND ${pr.timezone} > z.tz) FROM z WHERE z.tz IS NOT NULL
          ) SELECT tz FROM z WHERE tz IS NOT NULL`,
    );
  });
  return (await zones.run(db)).rows.map((r) => r.tz);
}

/** A zone's slice of the bucket: local times [from, to) on the local date, resumed after (afterAt, afterUser). */
export interface ZoneWindow {
  timeZone: string;
  /** `HH:MM:SS` */
  from: string;
  to: string;
  date: string;
  afterAt: string;
  afterUser: string;
}

const dueFields = {
  userId: pr.userId,
  timezone: pr.timezone,
  energyLevel: sql<Energy | null>`${pr.energyLevel}`,
  /** the reminder's local time, `HH:MM:SS` */
  at: sql<string>``,
  ...streakFields,
};
const dueStatements = new StatementCache<{ userId: string; timezone: string; date: string; energyLevel: Energy | null; at: string } & StreakColumns>();

/**
 * One page of the users whose local time for `job` falls in their zone's window, off vacation that
 * day, after each window's cursor, in the order of the job's due index (zone in the windows' order,
 * local time, user id). Each zone's LATERAL slice is an index range scan with the page's LIMIT, so a
 * page reads at most `limit` rows per zone, whatever the number of users due.
 */
export async function dueProfiles(db: Queryable, job: CronJob, windows: ZoneWindow[], limit: number) {
  const due = dueStatements.get(job, () => {
    const { enabled, time } = setting(job);
    const replaced = REPLACED_BY_BRIEFING.has(job) ? sql`AND NOT ${pr.morningBriefingEnabled}` : sql``;
    const inner = { ...dueFields, at: sql<string>`${time}::text`, t: time };
    return statement(
      sql`SELECT p.*, w.d::text AS date
            FROM unnest(${p('zones')}::text[], ${p('from')}::time[], ${p('to')}::time[], ${p('dates')}::date[], ${p('afterAt')}::time[], ${p('afterUser')}::uuid[])
                 WITH ORDINALITY AS w(tz, from_t, to_t, d, after_t, after_user, n)
            CROSS JOIN LATERAL (
              SELECT ${selectList(inner)}
                FROM ${profiles} p
               WHERE ${enabled} AND ${pr.timezone} = w.tz
                 AND ${time} >= w.from_t AND ${time} < w.to_t
                 AND (${time}, ${pr.userId}) > (w.after_t, w.after_user)
                 ${replaced}
                 AND NOT ${onVacation(sql`w.d`)}
               ORDER BY ${time}, ${pr.userId}
               LIMIT ${p('limit')}
            ) p
           ORDER BY w.n, p.t, p."userId"
           LIMIT ${p('limit')}`,
      { ...dueFields, date: sql<string>`` },
    );
  });
  const { rows } = await due.run(db, {
    zones: windows.map((w) => w.timeZone),
    from: windows.map((w) => w.from),
    to: windows.map((w) => w.to),
    dates: windows.map((w) => w.date),
    afterAt: windows.map((w) => w.afterAt),
    afterUser: windows.map((w) => w.afterUser),
    limit,
  });
  return rows;
}

/** Overdue reminders look back this far (reference §9). */
const OVERDUE_LOOKBACK_DAYS = 30;

/** The open tasks a reminder lists, relative to each user's local date `d.d`, and their order. */
const TASK_LISTS = {
  'due-today': { where: sql`${t.type} <> 'RECURRING' AND ${t.completedAt} IS NULL AND ${t.dueDate} = d.d`, order: sql`${t.dueDate}, ${t.sortOrder}, ${t.createdAt}, ${t.id}` },
  overdue: {
    where: sql`${t.type} <> 'RECURRING' AND ${t.completedAt} IS NULL AND ${t.dueDate} < d.d AND ${t.dueDate} >= d.d - ${sql.raw(String(OVERDUE_LOOKBACK_DAYS))}`,
    order: sql`${t.dueDate}, ${t.sortOrder}, ${t.createdAt}, ${t.id}`,
  },
  'recurring-due': { where: sql`${t.type} = 'RECURRING' AND ${t.nextDueDate} <= d.d`, order: sql`${t.nextDueDate}, ${t.sortOrder}, ${t.createdAt}, ${t.id}` },
};
export type TaskListKind = keyof typeof TASK_LISTS;

const listStatements = new StatementCache<{ userId: string; id: string; title: string; total: number }>();

/**
 * Per user, the first `limit` open tasks of a kind (not snoozed or paused that day) and how many
 * there are, in one statement for the page, but each user's tasks read through the index on
 * tasks.user_id (a LATERAL slice with a LIMIT is never turned into a join): as one join, the planner
 * hashed the whole tasks table for every page once pages were 1/50 of it.
 */
export async function openTaskLists(db: Queryable, kind: TaskListKind, users: { userId: string; date: string }[], limit: number) {
  const list = listStatements.get(kind, () => {
    const { where, order } = TASK_LISTS[kind];
    return statement(
      sql`SELECT d.user_id AS "userId", x.id, x.title, x.total::int AS total
            FROM unnest(${p('users')}::uuid[], ${p('dates')}::date[]) WITH ORDINALITY AS d(user_id, d, i)
            CROSS JOIN LATERAL (
              SELECT ${t.id} AS id, ${t.title} AS title, count(*) OVER () AS total, row_number() OVER (ORDER BY ${order}) AS n
                FROM ${tasks} t
               WHERE ${t.userId} = d.user_id AND ${where} AND (${t.snoozedUntil} IS NULL OR ${t.snoozedUntil} <= d.d) AND (${t.pausedAt} IS NULL OR ${t.pausedUntil} <= d.d)
               ORDER BY ${order}
               LIMIT ${p('limit')}
            ) x
           ORDER BY d.i, x.n`,
    );
  });
  return (await list.run(db, { users: users.map((u) => u.userId), dates: users.map((u) => u.date), limit })).rows;
}

// ─── weekly reviews ──────────────────────────────────────────────────────────────────────

/** Each user's Monday–Sunday, as `d(user_id, tz, ws, we)`. */
const WEEKS = sql`unnest(${p('users')}::uuid[], ${p('zones')}::text[], ${p('starts')}::date[], ${p('ends')}::date[]) AS d(user_id, tz, ws, we)`;
const inWeek = (date: SQL | PgColumn) => sql`${date} BETWEEN d.ws AND d.we`;
const weekCounts = statement<{ userId: string; completions: number; previous: number; taskCoins: number; achievementCoins: number; postponements: number; created: number }>(
  sql`SELECT d.user_id AS "userId",
        (SELECT count(*)::int FROM ${taskCompletions} c WHERE ${c.userId} = d.user_id AND ${inWeek(c.localDate)}) AS completions,
        (SELECT count(*)::int FROM ${taskCompletions} c WHERE ${c.userId} = d.user_id AND ${c.localDate} BETWEEN d.ws - 7 AND d.ws - 1) AS previous,
        (SELECT COALESCE(sum(${c.coinsAwarded}), 0)::int FROM ${taskCompletions} c WHERE ${c.userId} = d.user_id AND ${inWeek(c.localDate)}) AS "taskCoins",
        (SELECT COALESCE(sum(${userAchievements.coinsAwarded}), 0)::int FROM ${userAchievements}
          WHERE ${userAchievements.userId} = d.user_id AND ${inWeek(sql`(${userAchievements.unlockedAt} AT TIME ZONE d.tz)::date`)}) AS "achievementCoins",
        (SELECT count(*)::int FROM ${questPostponements} WHERE ${questPostponements.userId} = d.user_id AND ${inWeek(questPostponements.localDate)}) AS postponements,
        (SELECT count(*)::int FROM ${tasks} t WHERE ${t.userId} = d.user_id AND ${inWeek(sql`(${t.createdAt} AT TIME ZONE d.tz)::date`)}) AS created
      FROM ${WEEKS}`,
);
const weekTopics = statement<{ userId: string; topicId: string; title: string; completions: number }>(
  sql`SELECT "userId", "topicId", title, completions FROM (
        SELECT d.user_id AS "userId", ${tp.id} AS "topicId", ${tp.title} AS title, count(*)::int AS completions,
               row_number() OVER (PARTITION BY d.user_id ORDER BY count(*) DESC, ${tp.title}) AS n
          FROM ${WEEKS}
          JOIN ${taskCompletions} c ON ${c.userId} = d.user_id AND ${inWeek(c.localDate)}
          JOIN ${tasks} t ON ${t.id} = ${c.taskId}
          JOIN ${topics} tp ON ${tp.id} = ${t.topicId}
         GROUP BY d.user_id, ${tp.id}, ${tp.title}
      ) x WHERE n <= 3 ORDER BY "userId", n`,
);

/**
 * What a weekly review counts, for many users at once: completions (and last week's), coins earned
 * (tasks and achievements), quest postponements, tasks created, and the top 3 topics. Local dates
 * throughout; instants are converted with the user's zone.
 */
export async function weekFigures(db: Queryable, weeks: { userId: string; timezone: string; start: string; end: string }[]) {
  const values = { users: weeks.map((w) => w.userId), zones: weeks.map((w) => w.timezone), starts: weeks.map((w) => w.start), ends: weeks.map((w) => w.end) };
  const [counts, top] = await Promise.all([weekCounts.run(db, values), weekTopics.run(db, values)]);
  return { counts: counts.rows, topics: top.rows };
}

// ─── the game's statistics ───────────────────────────────────────────────────────────────

const completionsByDay = statement<{ date: string; count: number }>(
  sql`SELECT d::date::text AS date, count(${c.id})::int AS count
        FROM generate_series(${p('since')}::date, ${p('until')}::date, interval '1 day') AS d
        LEFT JOIN ${taskCompletions} c ON ${c.userId} = ${p('userId')} AND ${c.localDate} = d::date
       GROUP BY d ORDER BY d`,
);

/** A user's totals and completions per local day from `since` to `until`. */
export async function gameFigures(db: Queryable, userId: string, since: string, until: string) {
  const mine = eq(taskCompletions.userId, userId);
  const [totals, byDay] = await Promise.all([
    orm(db)
      .select({
        tasks: sql<number>`count(*)::int`,
        quests: sql<number>`(count(*) FILTER (WHERE ${taskCompletions.wasDailyQuest}))::int`,
        achievements: sql<number>`(SELECT count(*)::int FROM ${userAchievements} WHERE ${userAchievements.userId} = ${userId})`,
      })
      .from(taskCompletions)
      .where(mine),
    completionsByDay.run(db, { userId, since, until }),
  ]);
  return { ...totals[0]!, byDay: byDay.rows };
}

// ─── the admin page ──────────────────────────────────────────────────────────────────────

const countIf = (cond: SQL) => sql<number>`(count(*) FILTER (WHERE ${cond}))::int`;

/** Counts over the whole schema, never a title, note or any other row content; users by id and coins only. */
export async function adminFigures(db: Queryable) {
  const d = orm(db);
  const [taskTotals, completionTotals, top, unlocks] = await Promise.all([
    d
      .select({
        tasksTotal: sql<number>`count(*)::int`,
        tasksOpen: countIf(sql`${tasks.completedAt} IS NULL`),
        tasksCompleted: countIf(sql`${tasks.completedAt} IS NOT NULL`),
        usersWithTasks: sql<number>`count(DISTINCT ${tasks.userId})::int`,
      })
      .from(tasks),
    d
      .select({
        completionsTotal: sql<number>`count(*)::int`,
        completions7d: countIf(sql`${taskCompletions.completedAt} > now() - interval '7 days'`),
        completions30d: countIf(sql`${taskCompletions.completedAt} > now() - interval '30 days'`),
      })
      .from(taskCompletions),
    d
      .select({ userId: profiles.userId, coins: profiles.coins, coinsEarned: profiles.coinsEarned, completed: sql<number>`(SELECT count(*)::int FROM ${taskCompletions} WHERE ${taskCompletions.userId} = ${profiles.userId})` })
      .from(profiles)
      .orderBy(desc(profiles.coins), profiles.userId)
      .limit(10),
    d.select({ key: userAchievements.achievementKey, users: count() }).from(userAchievements).groupBy(userAchievements.achievementKey),
  ]);
  return { ...taskTotals[0]!, ...completionTotals[0]!, topUsers: top, unlocks: new Map(unlocks.map((u) => [u.key, u.users])) };
}
