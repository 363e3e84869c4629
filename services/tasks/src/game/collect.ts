import type { CronJob, ReminderDraft } from '@tasksvc/proto';
import type { Pool } from '@tasksvc/runtime';
import { ACHIEVEMENT_BY_KEY } from './domain/achievements.ts';
import { weekOf } from './domain/dates.ts';
import { dailyQuestDraft, dueTodayDraft, LIST_LIMIT, morningBriefingDraft, overdueDraft, recurringDueDrafts, streakDraft, weeklyReviewDraft, type Draft } from './domain/messages.ts';
import { localWindow } from './domain/reminders.ts';
import { streakAsOf, streakAtRisk, type StreakState } from './domain/streak.ts';
import { onVacation, STREAK_COLUMNS, streaksOf, type StreakColumns } from './streak-columns.ts';
import type { Energy } from './domain/quest.ts';
import { ensureQuests } from './quests.ts';
import { weeklyReviews } from './review.ts';

/** Which profile columns switch a job on and set its local time. */
const JOB_SETTINGS: Record<CronJob, { enabled: string; time: string }> = {
  'morning-briefing': { enabled: 'morning_briefing_enabled', time: 'morning_briefing_time' },
  overdue: { enabled: 'overdue_reminder_enabled', time: 'overdue_reminder_time' },
  'due-today': { enabled: 'due_today_reminder_enabled', time: 'due_today_reminder_time' },
  'recurring-due': { enabled: 'recurring_due_reminder_enabled', time: 'recurring_due_reminder_time' },
  'daily-quest': { enabled: 'notification_enabled', time: 'notification_time' },
  'streak-reminder': { enabled: 'notification_enabled', time: 'streak_reminder_time' },
  'weekly-review': { enabled: 'notification_enabled', time: 'weekly_review_time' },
};

const REPLACED_BY_BRIEFING = new Set<CronJob>(['daily-quest', 'due-today', 'overdue', 'recurring-due', 'streak-reminder']);

/** Overdue reminders look back this far (reference §9). */
const OVERDUE_LOOKBACK_DAYS = 30;

export interface DueUser {
  userId: string;
  timezone: string;
  date: string;
  energy: Energy | null;
  streak: StreakState;
}

/**
 * Users whose configured local time for `job` falls in the bucket, one page ordered by user id.
 * The per-zone windows are computed in TypeScript (DST rules live in domain/reminders.ts) and
 * joined in as arrays, so the query is one pass over profiles whatever the number of zones.
 */
export async function dueUsers(pool: Pool, job: CronJob, bucketStart: Date, afterUserId: string | null, limit: number): Promise<DueUser[]> {
  const zones = (await pool.query<{ timezone: string }>('SELECT DISTINCT timezone FROM tasks.profiles')).rows.map((r) => r.timezone);
  const windows = zones.flatMap((tz) => {
    try {
      const w = localWindow(bucketStart, tz);
      // The weekly review goes out on Sunday, for the Monday–Sunday week ending that day.
      return job === 'weekly-review' && w.weekday !== 7 ? [] : [w];
    } catch {
      return []; // an unknown zone name (validated on write) matches nobody rather than failing everyone
    }
  });
  if (windows.length === 0) return [];
  const s = JOB_SETTINGS[job];
  // While the morning briefing is on it replaces the quest, due, overdue, recurring and streak
  // notifications (reference §9) — not the weekly review.
  const briefingReplaces = REPLACED_BY_BRIEFING.has(job) ? 'AND NOT p.morning_briefing_enabled' : '';
  const { rows } = await pool.query<StreakColumns & { user_id: string; timezone: string; date: string; energy_level: Energy | null }>(
    `SELECT p.user_id, p.timezone, w.d::text AS date, p.energy_level, ${STREAK_COLUMNS}
       FROM unnest($1::text[], $2::int[], $3::int[], $4::date[]) AS w(tz, from_m, to_m, d)
       JOIN tasks.profiles p ON p.timezone = w.tz
      WHERE p.${s.enabled} ${briefingReplaces}
        AND (extract(hour FROM p.${s.time}) * 60 + extract(minute FROM p.${s.time})) >= w.from_m
        AND (extract(hour FROM p.${s.time}) * 60 + extract(minute FROM p.${s.time})) < w.to_m
        AND NOT ${onVacation('w.d')}
        AND ($5::uuid IS NULL OR p.user_id > $5::uuid)
      ORDER BY p.user_id
      LIMIT $6`,
    [windows.map((w) => w.timeZone), windows.map((w) => w.from), windows.map((w) => w.to), windows.map((w) => w.date), afterUserId, limit],
  );
  return rows.map((r) => ({
    userId: r.user_id,
    timezone: r.timezone,
    date: r.date,
    energy: r.energy_level,
    streak: streaksOf(r).streak,
  }));
}

interface TaskList {
  total: number;
  titles: string[];
  tasks: { id: string; title: string }[];
}

/** Open tasks per user matching `where` (relative to the user's local date `d.d`), first LIST_LIMIT titles and the count. */
async function taskLists(pool: Pool, users: DueUser[], where: string, order: string, limit = LIST_LIMIT): Promise<Map<string, TaskList>> {
  const { rows } = await pool.query<{ user_id: string; id: string; title: string; total: number }>(
    `SELECT user_id, id, title, total::int FROM (
       SELECT t.user_id, t.id, t.title, count(*) OVER w AS total, row_number() OVER (w ORDER BY ${order}) AS n
         FROM unnest($1::uuid[], $2::date[]) AS d(user_id, d)
         JOIN tasks.tasks t ON t.user_id = d.user_id
        WHERE ${where} AND (t.snoozed_until IS NULL OR t.snoozed_until <= d.d) AND (t.paused_at IS NULL OR t.paused_until <= d.d)
       WINDOW w AS (PARTITION BY t.user_id)
     ) x WHERE n <= $3 ORDER BY user_id, n`,
    [users.map((u) => u.userId), users.map((u) => u.date), limit],
  );
  const out = new Map<string, TaskList>();
  for (const r of rows) {
    const l = out.get(r.user_id) ?? { total: r.total, titles: [], tasks: [] };
    l.titles.push(r.title);
    l.tasks.push({ id: r.id, title: r.title });
    out.set(r.user_id, l);
  }
  return out;
}

const DUE_TODAY = `t.type <> 'RECURRING' AND t.completed_at IS NULL AND t.due_date = d.d`;
const OVERDUE = `t.type <> 'RECURRING' AND t.completed_at IS NULL AND t.due_date < d.d AND t.due_date >= d.d - ${OVERDUE_LOOKBACK_DAYS}`;
const RECURRING_DUE = `t.type = 'RECURRING' AND t.next_due_date <= d.d`;
const BY_DUE = 't.due_date, t.sort_order, t.created_at, t.id';

/** Achievements unlocked in the 24 hours before the bucket, newest first, per user. */
async function recentAchievements(pool: Pool, users: DueUser[], bucketStart: Date): Promise<Map<string, string[]>> {
  const { rows } = await pool.query<{ user_id: string; achievement_key: string }>(
    `SELECT user_id, achievement_key FROM tasks.user_achievements
      WHERE user_id = ANY($1::uuid[]) AND unlocked_at > $2::timestamptz - interval '24 hours' AND unlocked_at <= $2::timestamptz
      ORDER BY user_id, unlocked_at DESC`,
    [users.map((u) => u.userId), bucketStart.toISOString()],
  );
  const out = new Map<string, string[]>();
  for (const r of rows) out.set(r.user_id, [...(out.get(r.user_id) ?? []), ACHIEVEMENT_BY_KEY.get(r.achievement_key)?.title ?? r.achievement_key]);
  return out;
}

export async function collectReminders(
  pool: Pool,
  req: { job: CronJob; bucketStart: string; afterUserId: string | null; limit: number },
): Promise<{ users: number; drafts: ReminderDraft[]; nextAfterUserId: string | null }> {
  const bucket = new Date(req.bucketStart);
  const users = await dueUsers(pool, req.job, bucket, req.afterUserId, req.limit);
  const drafts: ReminderDraft[] = [];
  const push = (userId: string, d: Draft | null) => {
    if (d) drafts.push({ userId, ...d });
  };
  if (users.length > 0) {
    switch (req.job) {
      case 'due-today': {
        const lists = await taskLists(pool, users, DUE_TODAY, BY_DUE);
        for (const u of users) push(u.userId, dueTodayDraft(u.userId, u.date, lists.get(u.userId)?.titles ?? [], lists.get(u.userId)?.total ?? 0));
        break;
      }
      case 'overdue': {
        const lists = await taskLists(pool, users, OVERDUE, BY_DUE);
        for (const u of users) push(u.userId, overdueDraft(u.userId, u.date, lists.get(u.userId)?.titles ?? [], lists.get(u.userId)?.total ?? 0));
        break;
      }
      case 'recurring-due': {
        const lists = await taskLists(pool, users, RECURRING_DUE, 't.next_due_date, t.sort_order, t.created_at, t.id');
        for (const u of users) for (const d of recurringDueDrafts(u.userId, u.date, lists.get(u.userId)?.tasks ?? [])) push(u.userId, d);
        break;
      }
      case 'daily-quest': {
        const quests = await ensureQuests(pool, users.map((u) => ({ userId: u.userId, date: u.date, energy: u.energy })));
        for (const u of users) {
          const q = quests.get(u.userId);
          // A quest already done today needs no reminder.
          push(u.userId, dailyQuestDraft(u.userId, u.date, q && !q.completed_at ? q.title : null));
        }
        break;
      }
      case 'streak-reminder':
        for (const u of users) if (streakAtRisk(u.streak, u.date)) push(u.userId, streakDraft(u.userId, u.date, u.streak.current));
        break;
      case 'weekly-review': {
        const reviews = await weeklyReviews(pool, users.map((u) => ({ userId: u.userId, timezone: u.timezone, week: weekOf(u.date), streak: u.streak, today: u.date })));
        for (const u of users) push(u.userId, weeklyReviewDraft(u.userId, reviews.get(u.userId)!));
        break;
      }
      case 'morning-briefing': {
        const [quests, due, overdue, recent] = await Promise.all([
          ensureQuests(pool, users.map((u) => ({ userId: u.userId, date: u.date, energy: u.energy }))),
          taskLists(pool, users, DUE_TODAY, BY_DUE),
          taskLists(pool, users, OVERDUE, BY_DUE, 1),
          recentAchievements(pool, users, bucket),
        ]);
        for (const u of users) {
          const q = quests.get(u.userId);
          push(
            u.userId,
            morningBriefingDraft(u.userId, u.date, {
              questTitle: q && !q.completed_at ? q.title : null,
              dueToday: due.get(u.userId)?.titles ?? [],
              dueTodayTotal: due.get(u.userId)?.total ?? 0,
              overdueTotal: overdue.get(u.userId)?.total ?? 0,
              streak: streakAsOf(u.streak, u.date),
              recentAchievements: recent.get(u.userId) ?? [],
            }),
          );
        }
        break;
      }
    }
  }
  return { users: users.length, drafts, nextAfterUserId: users.length === req.limit ? users[users.length - 1]!.userId : null };
}
