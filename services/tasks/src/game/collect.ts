import type { CronJob, ReminderDraft } from '@tasksvc/proto';
import type { Pool } from '@tasksvc/runtime';
import { ACHIEVEMENT_BY_KEY } from './domain/achievements.ts';
import { weekOf } from './domain/dates.ts';
import { dailyQuestDraft, dueTodayDraft, LIST_LIMIT, morningBriefingDraft, overdueDraft, recurringDueDrafts, streakDraft, weeklyReviewDraft, type Draft } from './domain/messages.ts';
import { localWindow, type LocalWindow } from './domain/reminders.ts';
import { streakAsOf, streakAtRisk, type StreakState } from './domain/streak.ts';
import { streaksOf } from './streak-columns.ts';
import type { Energy } from './domain/quest.ts';
import { recentUnlocks } from '../db/achievements.ts';
import { dueProfiles, openTaskLists, zonesWith, type TaskListKind } from '../db/reports.ts';
import { ensureQuests } from './quests.ts';
import { weeklyReviews } from './review.ts';

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
 * Users whose configured local time for `job` falls in the bucket: one page, after `after` (a
 * cursor from the previous page), in the order of the job's due index. The per-zone windows are
 * computed in TypeScript (DST rules live in domain/reminders.ts), sorted by zone name (code-unit
 * order, so the cursor never depends on a database collation) and joined in as arrays; each zone's
 * slice is an index range scan that starts at the cursor, so every page costs the same however many
 * users are due, and a bucket of a few hundred due users among 100k reads only those.
 */
export async function dueUsers(pool: Pool, job: CronJob, bucketStart: Date, after: string | null, limit: number): Promise<DueUser[]> {
  const from = after ? decodeCursor(after) : null;
  const windows: (LocalWindow & { afterAt: string; afterUser: string })[] = [];
  for (const tz of (await zonesWith(pool, job)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))) {
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
  const rows = await dueProfiles(
    pool,
    job,
    windows.map((w) => ({ timeZone: w.timeZone, from: clock(w.from), to: clock(w.to), date: w.date, afterAt: w.afterAt, afterUser: w.afterUser })),
    limit,
  );
  return rows.map((r) => ({ userId: r.userId, timezone: r.timezone, date: r.date, energy: r.energyLevel, streak: streaksOf(r).streak, at: r.at }));
}

interface TaskList {
  total: number;
  titles: string[];
  tasks: { id: string; title: string }[];
}

/** Open tasks of a kind per user (relative to the user's local date), the first `limit` titles and the count. */
async function taskLists(pool: Pool, users: DueUser[], kind: TaskListKind, limit = LIST_LIMIT): Promise<Map<string, TaskList>> {
  const out = new Map<string, TaskList>();
  for (const r of await openTaskLists(pool, kind, users, limit)) {
    const l = out.get(r.userId) ?? { total: r.total, titles: [], tasks: [] };
    l.titles.push(r.title);
    l.tasks.push({ id: r.id, title: r.title });
    out.set(r.userId, l);
  }
  return out;
}

/** Achievements unlocked in the 24 hours before the bucket, newest first, per user, by title. */
async function recentAchievements(pool: Pool, users: DueUser[], bucketStart: Date): Promise<Map<string, string[]>> {
  const keys = await recentUnlocks(pool, users.map((u) => u.userId), bucketStart);
  return new Map([...keys].map(([user, list]) => [user, list.map((k) => ACHIEVEMENT_BY_KEY.get(k)?.title ?? k)]));
}

/** The drafts of one job for a page of due users, in the users' order. */
async function draftsFor(pool: Pool, job: CronJob, bucket: Date, users: DueUser[]): Promise<{ user: number; draft: Draft }[]> {
  const out: { user: number; draft: Draft }[] = [];
  const push = (user: number, d: Draft | null) => {
    if (d) out.push({ user, draft: d });
  };
  switch (job) {
    case 'due-today': {
      const lists = await taskLists(pool, users, 'due-today');
      users.forEach((u, i) => push(i, dueTodayDraft(u.userId, u.date, lists.get(u.userId)?.titles ?? [], lists.get(u.userId)?.total ?? 0)));
      break;
    }
    case 'overdue': {
      const lists = await taskLists(pool, users, 'overdue');
      users.forEach((u, i) => push(i, overdueDraft(u.userId, u.date, lists.get(u.userId)?.titles ?? [], lists.get(u.userId)?.total ?? 0)));
      break;
    }
    case 'recurring-due': {
      const lists = await taskLists(pool, users, 'recurring-due');
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
        push(i, dailyQuestDraft(u.userId, u.date, q && !q.completedAt ? q.title : null));
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
        taskLists(pool, users, 'due-today'),
        taskLists(pool, users, 'overdue', 1),
        recentAchievements(pool, users, bucket),
      ]);
      users.forEach((u, i) => {
        const q = quests.get(u.userId);
        push(
          i,
          morningBriefingDraft(u.userId, u.date, {
            questTitle: q?.title ?? null,
            questDone: Boolean(q?.completedAt),
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
