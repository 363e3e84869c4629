import type { CronJob, ReminderDraft } from '@tasksvc/proto';
import type { Pool } from '@tasksvc/runtime';
import { ACHIEVEMENT_BY_KEY } from './domain/achievements.ts';
import { weekOf } from './domain/dates.ts';
import { dailyQuestDraft, dueTodayDraft, LIST_LIMIT, morningBriefingDraft, overdueDraft, recurringDueDrafts, streakDraft, weeklyReviewDraft, type Draft } from './domain/messages.ts';
import { localWindow } from './domain/reminders.ts';
import { streakAsOf, streakAtRisk, type StreakState } from './domain/streak.ts';
import { streaksOf } from './streak-columns.ts';
import { dueProfiles, openTaskLists, profileZones, type TaskListKind } from '../db/reports.ts';
import { recentUnlocks } from '../db/achievements.ts';
import type { Energy } from './domain/quest.ts';
import { ensureQuests } from './quests.ts';
import { weeklyReviews } from './review.ts';

export interface DueUser {
  userId: string;
  timezone: string;
  date: string;
  energy: Energy | null;
  streak: StreakState;
}

/**
 * Users whose configured local time for `job` falls in the bucket, one page ordered by user id.
 * The per-zone windows are computed here (DST rules live in domain/reminders.ts) and joined in as
 * arrays, so the query is one pass over profiles whatever the number of zones.
 */
export async function dueUsers(pool: Pool, job: CronJob, bucketStart: Date, afterUserId: string | null, limit: number): Promise<DueUser[]> {
  const windows = (await profileZones(pool)).flatMap((tz) => {
    try {
      const w = localWindow(bucketStart, tz);
      // The weekly review goes out on Sunday, for the Monday–Sunday week ending that day.
      return job === 'weekly-review' && w.weekday !== 7 ? [] : [w];
    } catch {
      return []; // an unknown zone name (validated on write) matches nobody rather than failing everyone
    }
  });
  if (windows.length === 0) return [];
  const rows = await dueProfiles(pool, job, windows, afterUserId, limit);
  return rows.map((r) => ({ userId: r.userId, timezone: r.timezone, date: r.date, energy: r.energyLevel, streak: streaksOf(r).streak }));
}

interface TaskList {
  total: number;
  titles: string[];
  tasks: { id: string; title: string }[];
}

/** Open tasks of a kind per user (relative to the user's local date), the first LIST_LIMIT titles and the count. */
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
        const lists = await taskLists(pool, users, 'due-today');
        for (const u of users) push(u.userId, dueTodayDraft(u.userId, u.date, lists.get(u.userId)?.titles ?? [], lists.get(u.userId)?.total ?? 0));
        break;
      }
      case 'overdue': {
        const lists = await taskLists(pool, users, 'overdue');
        for (const u of users) push(u.userId, overdueDraft(u.userId, u.date, lists.get(u.userId)?.titles ?? [], lists.get(u.userId)?.total ?? 0));
        break;
      }
      case 'recurring-due': {
        const lists = await taskLists(pool, users, 'recurring-due');
        for (const u of users) for (const d of recurringDueDrafts(u.userId, u.date, lists.get(u.userId)?.tasks ?? [])) push(u.userId, d);
        break;
      }
      case 'daily-quest': {
        const quests = await ensureQuests(pool, users.map((u) => ({ userId: u.userId, date: u.date, energy: u.energy })));
        for (const u of users) {
          const q = quests.get(u.userId);
          // A quest already done today needs no reminder.
          push(u.userId, dailyQuestDraft(u.userId, u.date, q && !q.completedAt ? q.title : null));
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
          taskLists(pool, users, 'due-today'),
          taskLists(pool, users, 'overdue', 1),
          recentAchievements(pool, users, bucket),
        ]);
        for (const u of users) {
          const q = quests.get(u.userId);
          push(
            u.userId,
            morningBriefingDraft(u.userId, u.date, {
              questTitle: q && !q.completedAt ? q.title : null,
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
