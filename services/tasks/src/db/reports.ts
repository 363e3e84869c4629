import type { CronJob } from '@tasksvc/proto';
import { orm, selectList, statement, StatementCache, type Queryable } from '@tasksvc/runtime';
import { count, desc, eq, sql, type SQL } from 'drizzle-orm';
import { alias, type PgColumn } from 'drizzle-orm/pg-core';
import type { Energy } from '../game/domain/quest.ts';
import type { StreakColumns } from './profiles.ts';
import { profiles, questPostponements, taskCompletions, tasks, topics, userAchievements } from './schema.ts';

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

/** Which profile settings switch a job on and set its local time. */
const JOB_SETTINGS: Record<CronJob, { enabled: PgColumn; time: PgColumn }> = {
  'morning-briefing': { enabled: pr.morningBriefingEnabled, time: pr.morningBriefingTime },
  overdue: { enabled: pr.overdueReminderEnabled, time: pr.overdueReminderTime },
  'due-today': { enabled: pr.dueTodayReminderEnabled, time: pr.dueTodayReminderTime },
  'recurring-due': { enabled: pr.recurringDueReminderEnabled, time: pr.recurringDueReminderTime },
  'daily-quest': { enabled: pr.notificationEnabled, time: pr.notificationTime },
  'streak-reminder': { enabled: pr.notificationEnabled, time: pr.streakReminderTime },
  'weekly-review': { enabled: pr.notificationEnabled, time: pr.weeklyReviewTime },
};

/** While the morning briefing is on it replaces the quest, due, overdue, recurring and streak notifications (reference §9), not the weekly review. */
const REPLACED_BY_BRIEFING = new Set<CronJob>(['daily-quest', 'due-today', 'overdue', 'recurring-due', 'streak-reminder']);

/** Every timezone some profile has. */
export async function profileZones(db: Queryable): Promise<string[]> {
  return (await orm(db).selectDistinct({ timezone: profiles.timezone }).from(profiles)).map((r) => r.timezone);
}

/** A zone's window of the bucket: local minutes of the day [from, to) on the local date. */
export interface ZoneWindow {
  timeZone: string;
  from: number;
  to: number;
  date: string;
}

const dueFields = { userId: pr.userId, timezone: pr.timezone, date: sql<string>`w.d::text`, energyLevel: sql<Energy | null>`${pr.energyLevel}`, ...streakFields };
const dueStatements = new StatementCache<{ userId: string; timezone: string; date: string; energyLevel: Energy | null } & StreakColumns>();

/**
 * Users whose configured local time for `job` falls in their zone's window (the windows joined in as
 * arrays, so it is one pass over profiles whatever the number of zones), off vacation that day; one
 * page ordered by user id.
 */
export async function dueProfiles(db: Queryable, job: CronJob, windows: ZoneWindow[], afterUserId: string | null, limit: number) {
  const due = dueStatements.get(job, () => {
    const s = JOB_SETTINGS[job];
    const minutes = sql`(extract(hour FROM ${s.time}) * 60 + extract(minute FROM ${s.time}))`;
    const replaced = REPLACED_BY_BRIEFING.has(job) ? sql`AND NOT ${pr.morningBriefingEnabled}` : sql``;
    return statement(
      sql`SELECT ${selectList(dueFields)}
            FROM unnest(${p('zones')}::text[], ${p('from')}::int[], ${p('to')}::int[], ${p('dates')}::date[]) AS w(tz, from_m, to_m, d)
            JOIN ${profiles} p ON ${pr.timezone} = w.tz
           WHERE ${s.enabled} ${replaced}
             AND ${minutes} >= w.from_m AND ${minutes} < w.to_m
             AND NOT ${onVacation(sql`w.d`)}
             AND (${p('after')}::uuid IS NULL OR ${pr.userId} > ${p('after')}::uuid)
           ORDER BY ${pr.userId}
           LIMIT ${p('limit')}`,
      dueFields,
    );
  });
  const { rows } = await due.run(db, {
    zones: windows.map((w) => w.timeZone),
    from: windows.map((w) => w.from),
    to: windows.map((w) => w.to),
    dates: windows.map((w) => w.date),
    after: afterUserId,
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

/** Per user, the first `limit` open tasks of a kind (not snoozed or paused that day) and how many there are, in one statement. */
export async function openTaskLists(db: Queryable, kind: TaskListKind, users: { userId: string; date: string }[], limit: number) {
  const list = listStatements.get(kind, () => {
    const { where, order } = TASK_LISTS[kind];
    return statement(
      sql`SELECT "userId", id, title, total::int FROM (
            SELECT ${t.userId} AS "userId", ${t.id} AS id, ${t.title} AS title, count(*) OVER w AS total, row_number() OVER (w ORDER BY ${order}) AS n
              FROM unnest(${p('users')}::uuid[], ${p('dates')}::date[]) AS d(user_id, d)
              JOIN ${tasks} t ON ${t.userId} = d.user_id
             WHERE ${where} AND (${t.snoozedUntil} IS NULL OR ${t.snoozedUntil} <= d.d) AND (${t.pausedAt} IS NULL OR ${t.pausedUntil} <= d.d)
            WINDOW w AS (PARTITION BY ${t.userId})
          ) x WHERE n <= ${p('limit')} ORDER BY "userId", n`,
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
      .select({ userId: profiles.userId, coins: profiles.coins, completed: sql<number>`(SELECT count(*)::int FROM ${taskCompletions} WHERE ${taskCompletions.userId} = ${profiles.userId})` })
      .from(profiles)
      .orderBy(desc(profiles.coins), profiles.userId)
      .limit(10),
    d.select({ key: userAchievements.achievementKey, users: count() }).from(userAchievements).groupBy(userAchievements.achievementKey),
  ]);
  return { ...taskTotals[0]!, ...completionTotals[0]!, topUsers: top, unlocks: new Map(unlocks.map((u) => [u.key, u.users])) };
}
