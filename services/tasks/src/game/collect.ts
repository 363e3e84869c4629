import type { CronJob, ReminderDraft } from '@tasksvc/proto';
import type { Pool } from '@tasksvc/runtime';
import { ACHIEVEMENT_BY_KEY } from './domain/achievements.ts';
import { weekOf } from './domain/dates.ts';
import { dailyQuestDraft, dueTodayDraft, LIST_LIMIT, morningBriefingDraft, overdueDraft, recurringDueDrafts, streakDraft, weeklyReviewDraft, type Draft } from './domain/messages.ts';
import { localWindow, type LocalWindow } from './domain/reminders.ts';
import { streakAsOf, streakAtRisk, type StreakState } from './domain/streak.ts';
import { onVacation, STREAK_COLUMNS, streaksOf, type StreakColumns } from './streak-columns.ts';
import type { Energy } from './domain/quest.ts';
import { ensureQuests } from './quests.ts';
import { weeklyReviews } from './review.ts';

/**
 * Which profile columns switch a job on and set its local time. Migration 0103_cron_due_indexes.sql
 * has one partial index per job on (timezone, time, user_id) WHERE enabled: keep the two in step.
 */
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

/**
 * A reply stays below this many bytes of draft text (NATS refuses messages over 1 MB by default):
 * a page of users whose lists are long is cut short, and the next page starts where it was cut.
 */
export const REPLY_BUDGET_BYTES = 600_000;

export interface DueUser {
  userId: string;
  timezone: string;
  date: string;
  energy: Energy | null;
  streak: StreakState;
  /** the reminder's local time, `HH:MM:SS`: with the zone and the user id, the page's keyset position */
  at: string;
}

/**
 * Where a page ends, in the order of the job's due index: zone, local time, user id. Opaque to the
 * scheduler, which hands it back as `after`. The zone goes last, as it is the only part that could
 * hold the separator.
 */
interface Cursor {
  timeZone: string;
  at: string;
  userId: string;
}
const encodeCursor = (u: DueUser): string => `${u.at}|${u.userId}|${u.timezone}`;
function decodeCursor(s: string): Cursor {
  const [at, userId, ...zone] = s.split('|');
  if (!at || !userId || zone.length === 0) throw new Error(`bad cron page cursor: ${s}`);
  return { at, userId, timeZone: zone.join('|') };
}

/** Below every real user id (gen_random_uuid never makes it): "from the window's first minute on". */
const NIL_UUID = '00000000-0000-0000-0000-000000000000';
/** Minutes after local midnight as a `time` literal; 1440 is '24:00:00', which `time` accepts. */
const clock = (m: number) => `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}:00`;

/**
 * The zones of the users who have `enabled` on: a skip scan over the job's due index (one index
 * probe per distinct zone) rather than a read of every profile.
 */
async function zonesIn(pool: Pool, enabled: string): Promise<string[]> {
  const { rows } = await pool.query<{ tz: string }>(
    `WITH RECURSIVE z(tz) AS (
       SELECT min(timezone) FROM tasks.profiles WHERE ${enabled}
       UNION ALL
       SELECT (SELECT min(p.timezone) FROM tasks.profiles p WHERE p.${enabled} AND p.timezone > z.tz) FROM z WHERE z.tz IS NOT NULL
     ) SELECT tz FROM z WHERE tz IS NOT NULL`,
  );
  return rows.map((r) => r.tz);
}

/**
 * Users whose configured local time for `job` falls in the bucket: one page, after `after` (a
 * cursor from the previous page), in the order of the job's due index. The per-zone windows are
 * computed in TypeScript (DST rules live in domain/reminders.ts), sorted by zone name (code-unit
 * order, so the cursor never depends on a database collation) and joined in as arrays; each zone's
 * slice is an index range scan that starts at the cursor, so every page costs the same however many
 * users are due, and a bucket of a few hundred due users among 100k reads only those.
 */
export async function dueUsers(pool: Pool, job: CronJob, bucketStart: Date, after: string | null, limit: number): Promise<DueUser[]> {
  const s = JOB_SETTINGS[job];
  const from = after ? decodeCursor(after) : null;
  const windows: (LocalWindow & { afterAt: string; afterUser: string })[] = [];
  for (const tz of (await zonesIn(pool, s.enabled)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (from && tz < from.timeZone) continue; // pages before the cursor's zone are done
    let w: LocalWindow;
    try {
      w = localWindow(bucketStart, tz);
    } catch {
      continue; // an unknown zone name (validated on write) matches nobody rather than failing everyone
    }
    // The weekly review goes out on Sunday, for the Monday–Sunday week ending that day.
    if (job === 'weekly-review' && w.weekday !== 7) continue;
    const resume = from && tz === from.timeZone;
    windows.push({ ...w, afterAt: resume ? from.at : clock(w.from), afterUser: resume ? from.userId : NIL_UUID });
  }
  if (windows.length === 0) return [];
  // While the morning briefing is on it replaces the quest, due, overdue, recurring and streak
  // notifications (reference §9) — not the weekly review.
  const briefingReplaces = REPLACED_BY_BRIEFING.has(job) ? 'AND NOT p.morning_briefing_enabled' : '';
  // Each zone's LATERAL slice is `LIMIT $7` in index order, so a page reads at most $7 rows per zone;
  // the outer ORDER BY puts the zones in the array's order.
  const { rows } = await pool.query<StreakColumns & { user_id: string; timezone: string; date: string; energy_level: Energy | null; at: string }>(
    `SELECT p.user_id, p.timezone, w.d::text AS date, p.energy_level, p.at, p.streak_current, p.streak_max, p.streak_last_date, p.streak_shield_used_month,
            p.quest_streak_current, p.quest_streak_max, p.quest_streak_last_date, p.vacation_start_date, p.vacation_end_date
       FROM unnest($1::text[], $2::time[], $3::time[], $4::date[], $5::time[], $6::uuid[]) WITH ORDINALITY AS w(tz, from_t, to_t, d, after_t, after_user, n)
       CROSS JOIN LATERAL (
         SELECT p.user_id, p.timezone, p.energy_level, p.${s.time} AS t, p.${s.time}::text AS at, ${STREAK_COLUMNS}
           FROM tasks.profiles p
          WHERE p.${s.enabled} AND p.timezone = w.tz
            AND p.${s.time} >= w.from_t AND p.${s.time} < w.to_t
            AND (p.${s.time}, p.user_id) > (w.after_t, w.after_user)
            ${briefingReplaces}
            AND NOT ${onVacation('w.d')}
          ORDER BY p.${s.time}, p.user_id
          LIMIT $7
       ) p
      ORDER BY w.n, p.t, p.user_id
      LIMIT $7`,
    [
      windows.map((w) => w.timeZone),
      windows.map((w) => clock(w.from)),
      windows.map((w) => clock(w.to)),
      windows.map((w) => w.date),
      windows.map((w) => w.afterAt),
      windows.map((w) => w.afterUser),
      limit,
    ],
  );
  return rows.map((r) => ({
    userId: r.user_id,
    timezone: r.timezone,
    date: r.date,
    energy: r.energy_level,
    streak: streaksOf(r).streak,
    at: r.at,
  }));
}

interface TaskList {
  total: number;
  titles: string[];
  tasks: { id: string; title: string }[];
}

/**
 * Open tasks per user matching `where` (relative to the user's local date `d.d`), first `limit`
 * titles and the count. One statement for the page, but each user's tasks are read through the
 * index on tasks.user_id (a LATERAL slice with a LIMIT is never turned into a join): as one join,
 * the planner hashed the whole tasks table for every page once pages were 1/50 of it, so the cost
 * of a page grew with the number of users.
 */
async function taskLists(pool: Pool, users: DueUser[], where: string, order: string, limit = LIST_LIMIT): Promise<Map<string, TaskList>> {
  const { rows } = await pool.query<{ user_id: string; id: string; title: string; total: number }>(
    `SELECT d.user_id, x.id, x.title, x.total::int
       FROM unnest($1::uuid[], $2::date[]) WITH ORDINALITY AS d(user_id, d, i)
       CROSS JOIN LATERAL (
         SELECT t.id, t.title, count(*) OVER () AS total, row_number() OVER (ORDER BY ${order}) AS n
           FROM tasks.tasks t
          WHERE t.user_id = d.user_id AND ${where} AND (t.snoozed_until IS NULL OR t.snoozed_until <= d.d) AND (t.paused_at IS NULL OR t.paused_until <= d.d)
          ORDER BY ${order}
          LIMIT $3
       ) x
      ORDER BY d.i, x.n`,
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

/** The drafts of one job for a page of due users, in the users' order. */
async function draftsFor(pool: Pool, job: CronJob, bucket: Date, users: DueUser[]): Promise<{ user: number; draft: Draft }[]> {
  const out: { user: number; draft: Draft }[] = [];
  const push = (user: number, d: Draft | null) => {
    if (d) out.push({ user, draft: d });
  };
  switch (job) {
    case 'due-today': {
      const lists = await taskLists(pool, users, DUE_TODAY, BY_DUE);
      users.forEach((u, i) => push(i, dueTodayDraft(u.userId, u.date, lists.get(u.userId)?.titles ?? [], lists.get(u.userId)?.total ?? 0)));
      break;
    }
    case 'overdue': {
      const lists = await taskLists(pool, users, OVERDUE, BY_DUE);
      users.forEach((u, i) => push(i, overdueDraft(u.userId, u.date, lists.get(u.userId)?.titles ?? [], lists.get(u.userId)?.total ?? 0)));
      break;
    }
    case 'recurring-due': {
      const lists = await taskLists(pool, users, RECURRING_DUE, 't.next_due_date, t.sort_order, t.created_at, t.id');
      users.forEach((u, i) => {
        for (const d of recurringDueDrafts(u.userId, u.date, lists.get(u.userId)?.tasks ?? [])) push(i, d);
      });
      break;
    }
    case 'daily-quest': {
      const quests = await ensureQuests(pool, users.map((u) => ({ userId: u.userId, date: u.date, energy: u.energy })));
      users.forEach((u, i) => {
        const q = quests.get(u.userId);
        // A quest already done today needs no reminder.
        push(i, dailyQuestDraft(u.userId, u.date, q && !q.completed_at ? q.title : null));
      });
      break;
    }
    case 'streak-reminder':
      users.forEach((u, i) => {
        if (streakAtRisk(u.streak, u.date)) push(i, streakDraft(u.userId, u.date, u.streak.current));
      });
      break;
    case 'weekly-review': {
      const reviews = await weeklyReviews(pool, users.map((u) => ({ userId: u.userId, timezone: u.timezone, week: weekOf(u.date), streak: u.streak, today: u.date })));
      users.forEach((u, i) => push(i, weeklyReviewDraft(u.userId, reviews.get(u.userId)!)));
      break;
    }
    case 'morning-briefing': {
      const [quests, due, overdue, recent] = await Promise.all([
        ensureQuests(pool, users.map((u) => ({ userId: u.userId, date: u.date, energy: u.energy }))),
        taskLists(pool, users, DUE_TODAY, BY_DUE),
        taskLists(pool, users, OVERDUE, BY_DUE, 1),
        recentAchievements(pool, users, bucket),
      ]);
      users.forEach((u, i) => {
        const q = quests.get(u.userId);
        push(
          i,
          morningBriefingDraft(u.userId, u.date, {
            questTitle: q && !q.completed_at ? q.title : null,
            dueToday: due.get(u.userId)?.titles ?? [],
            dueTodayTotal: due.get(u.userId)?.total ?? 0,
            overdueTotal: overdue.get(u.userId)?.total ?? 0,
            streak: streakAsOf(u.streak, u.date),
            recentAchievements: recent.get(u.userId) ?? [],
          }),
        );
      });
      break;
    }
  }
  return out;
}

/** Bytes a draft adds to the reply, near enough: its texts plus the fixed fields (ids, tag, url, JSON). */
const draftBytes = (d: Draft) => Buffer.byteLength(d.title) + Buffer.byteLength(d.body) + d.dedupeKey.length + 160;

export async function collectReminders(
  pool: Pool,
  req: { job: CronJob; bucketStart: string; after: string | null; limit: number },
): Promise<{ users: number; drafts: ReminderDraft[]; next: string | null }> {
  const bucket = new Date(req.bucketStart);
  let users = await dueUsers(pool, req.job, bucket, req.after, req.limit);
  let more = users.length === req.limit;
  let drafts = users.length > 0 ? await draftsFor(pool, req.job, bucket, users) : [];
  // Over the reply budget: end the page before the first user whose drafts do not fit (the next
  // page recomputes them; collection is read-only but for the day's quest, which is kept).
  let bytes = 0;
  const over = drafts.findIndex((d) => (bytes += draftBytes(d.draft)) > REPLY_BUDGET_BYTES);
  if (over >= 0 && drafts[over]!.user > 0) {
    users = users.slice(0, drafts[over]!.user);
    drafts = drafts.slice(0, over).filter((d) => d.user < users.length);
    more = true;
  }
  return {
    users: users.length,
    drafts: drafts.map((d) => ({ userId: users[d.user]!.userId, ...d.draft })),
    next: more ? encodeCursor(users[users.length - 1]!) : null,
  };
}
