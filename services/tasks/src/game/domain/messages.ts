import type { IsoDate } from './dates.ts';

/**
 * Notification texts, one builder per cron job. Each returns the notifier's request minus the
 * user id; `dedupeKey` is stable for one logical notification so redeliveries never notify twice.
 */
export interface Draft {
  title: string;
  body: string;
  url: string | null;
  tag: 'daily-quest' | 'streak' | 'due-today' | 'overdue' | 'recurring-due' | 'weekly-review' | 'morning-briefing' | 'achievement';
  dedupeKey: string;
}

/** How many tasks a list notification names (reference §9). */
export const LIST_LIMIT = 10;
/** Up to this many recurring tasks get a notification each; more get one summary. */
export const RECURRING_SINGLE_MAX = 3;

/** The notifier's limits (proto notificationRequest): a long task title must not fail a whole page. */
const TITLE_MAX = 200;
const BODY_MAX = 4000;
const clip = (s: string, max: number) => (s.length <= max ? s : `${s.slice(0, max - 1)}…`);
const draft = (d: Draft): Draft => ({ ...d, title: clip(d.title, TITLE_MAX), body: clip(d.body, BODY_MAX) });

const bullets = (titles: readonly string[]) => titles.map((t) => `• ${t}`).join('\n');
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

function listBody(titles: readonly string[], total: number): string {
  const shown = titles.slice(0, LIST_LIMIT);
  const more = total - shown.length;
  return more > 0 ? `${bullets(shown)}\n…and ${more} more` : bullets(shown);
}

export function dueTodayDraft(userId: string, date: IsoDate, titles: readonly string[], total: number): Draft | null {
  if (total === 0) return null;
  return draft({ title: `${plural(total, 'task')} due today`, body: listBody(titles, total), url: '/tasks', tag: 'due-today', dedupeKey: `due-today:${userId}:${date}` });
}

export function overdueDraft(userId: string, date: IsoDate, titles: readonly string[], total: number): Draft | null {
  if (total === 0) return null;
  return draft({ title: `${plural(total, 'overdue task')}`, body: listBody(titles, total), url: '/tasks', tag: 'overdue', dedupeKey: `overdue:${userId}:${date}` });
}

export function recurringDueDrafts(userId: string, date: IsoDate, tasks: readonly { id: string; title: string }[]): Draft[] {
  if (tasks.length === 0) return [];
  if (tasks.length <= RECURRING_SINGLE_MAX) {
    return tasks.map((t) => draft({ title: `Due today: ${t.title}`, body: 'A recurring task is due today.', url: '/tasks', tag: 'recurring-due', dedupeKey: `recurring-due:${userId}:${date}:${t.id}` }));
  }
  return [
    draft({
      title: `${tasks.length} recurring tasks due today`,
      body: listBody(tasks.map((t) => t.title), tasks.length),
      url: '/tasks',
      tag: 'recurring-due',
      dedupeKey: `recurring-due:${userId}:${date}`,
    }),
  ];
}

export function dailyQuestDraft(userId: string, date: IsoDate, questTitle: string | null): Draft | null {
  if (questTitle === null) return null;
  return draft({ title: "Today's quest", body: questTitle, url: '/dashboard', tag: 'daily-quest', dedupeKey: `daily-quest:${userId}:${date}` });
}

export function streakDraft(userId: string, date: IsoDate, streak: number): Draft {
  return {
    title: `Keep your ${plural(streak, 'day')} streak`,
    body: 'Nothing completed yet today. One task keeps the streak going.',
    url: '/tasks',
    tag: 'streak',
    dedupeKey: `streak:${userId}:${date}`,
  };
}

export interface WeeklyReview {
  weekStart: IsoDate;
  weekEnd: IsoDate;
  completions: number;
  previousWeekCompletions: number;
  postponements: number;
  coinsEarned: number;
  streakCurrent: number;
  streakMax: number;
  tasksCreated: number;
  topTopics: { topicId: string; title: string; completions: number }[];
}

export function weeklyReviewDraft(userId: string, r: WeeklyReview): Draft {
  const delta = r.completions - r.previousWeekCompletions;
  const trend = delta === 0 ? 'same as last week' : `${delta > 0 ? '+' : ''}${delta} vs last week`;
  const lines = [
    `${plural(r.completions, 'task')} completed (${trend})`,
    `${plural(r.coinsEarned, 'coin')} earned, ${plural(r.postponements, 'postponement')}`,
    `Streak ${r.streakCurrent} (best ${r.streakMax}), ${plural(r.tasksCreated, 'task')} created`,
  ];
  if (r.topTopics.length) lines.push(`Top topics: ${r.topTopics.map((t) => t.title).join(', ')}`);
  return draft({ title: 'Your weekly review', body: lines.join('\n'), url: '/review', tag: 'weekly-review', dedupeKey: `weekly-review:${userId}:${r.weekStart}` });
}

export interface Briefing {
  questTitle: string | null;
  /** today's quest is already completed (a briefing sent after it was done must not say there is none) */
  questDone: boolean;
  dueToday: readonly string[];
  dueTodayTotal: number;
  overdueTotal: number;
  streak: number;
  /** achievements unlocked in the last 24 hours, newest first */
  recentAchievements: readonly string[];
}

/** The morning digest: sent even on an empty day, and replaces the other reminders while enabled. */
export function morningBriefingDraft(userId: string, date: IsoDate, b: Briefing): Draft {
  const lines: string[] = [];
  if (b.questDone) lines.push(b.questTitle ? `Today's quest is done: ${b.questTitle}` : "Today's quest is done.");
  else lines.push(b.questTitle ? `Quest: ${b.questTitle}` : 'No quest today.');
  if (b.dueTodayTotal > 0) lines.push(`Due today (${b.dueTodayTotal}):\n${listBody(b.dueToday, b.dueTodayTotal)}`);
  else lines.push('Nothing due today.');
  if (b.overdueTotal > 0) lines.push(`${plural(b.overdueTotal, 'overdue task')}`);
  if (b.streak > 0) lines.push(`Streak: ${plural(b.streak, 'day')}`);
  const ach = b.recentAchievements.slice(0, 5);
  if (ach.length) lines.push(`New achievements: ${ach.join(', ')}`);
  return draft({ title: 'Good morning', body: lines.join('\n'), url: '/dashboard', tag: 'morning-briefing', dedupeKey: `morning-briefing:${userId}:${date}` });
}

export function achievementDraft(userId: string, key: string, title: string, reward: number): Draft {
  return draft({ title: `Achievement unlocked: ${title}`, body: `+${plural(reward, 'coin')}`, url: '/achievements', tag: 'achievement', dedupeKey: `achievement:${userId}:${key}` });
}
