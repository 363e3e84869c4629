import { z } from 'zod';
import { localDate } from '@tasksvc/proto/calendar/dates.ts';
import { RECURRENCE_TYPES, startSchedule, type RecurrenceRule } from '@tasksvc/proto/calendar/recurrence.ts';
import type { ReadContext } from './context.ts';
import { fileError, ImportFileError, plannedTask, type ImportPlan, type PlannedSettings, type PlannedTask, type SourceLocation } from './plan.ts';

/**
 * The reference app's (Momo's) export: one JSON document `{ exportedAt, version: "1", profile,
 * topics, tasks, taskCompletions, wishlistItems, achievements, notificationLog }` (its fields as the
 * reference notes list them). Items keep their source ids as keys (`momo:task:<id>`).
 *
 * - Its export carries a recurring task's interval but not its kind: a RECURRING task repeats every N
 *   days, counted from completion (the reference's default), unless the document also names
 *   `recurrenceType`, `recurrenceWeekdays` or `recurrenceFixed` (newer versions), which are used.
 * - Its dates may be instants at UTC midnight (a known defect of the reference): their date part is
 *   the calendar date meant.
 * - Coins, level, streaks and achievements are earned here, not brought over; the notification log
 *   is not imported. Each is reported.
 */

/** Whether a parsed JSON document is a reference export. */
export function isReferenceExport(doc: unknown): boolean {
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) return false;
  const d = doc as Record<string, unknown>;
  return 'format' in d ? false : Array.isArray(d.tasks) && (Array.isArray(d.taskCompletions) || (typeof d.profile === 'object' && 'version' in d));
}

const text = z.string().max(100_000);
const opt = <T extends z.ZodType>(s: T) => s.nullable().optional();
/** a calendar date, or an instant whose UTC date is the date meant */
const dateLike = z.string().refine((v) => /^\d{4}-\d{2}-\d{2}(T.*)?$/.test(v) && !Number.isNaN(Date.parse(v.length === 10 ? `${v}T00:00:00Z` : v)) && validDay(v.slice(0, 10)), 'must be a date YYYY-MM-DD (or an ISO 8601 instant)');
const instant = z.string().refine((v) => !Number.isNaN(Date.parse(v)), 'must be an ISO 8601 instant');
const validDay = (d: string) => {
  const [y, m, day] = d.split('-').map(Number) as [number, number, number];
  const dt = new Date(Date.UTC(y, m - 1, day));
  return dt.getUTCFullYear() === y && dt.getUTCMonth() === m - 1 && dt.getUTCDate() === day;
};
const priority = z.enum(['HIGH', 'NORMAL', 'SOMEDAY']);
const timeOfDay = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d(:[0-5]\d)?$/, 'must be a time HH:MM');

const refTopic = z.object({
  id: z.union([z.string(), z.number()]).transform(String),
  title: text,
  description: opt(text),
  color: opt(z.string()),
  icon: opt(z.string()),
  priority: opt(priority),
  archived: opt(z.boolean()),
  sequential: opt(z.boolean()),
  createdAt: opt(instant),
});
const refTask = z.object({
  id: z.union([z.string(), z.number()]).transform(String),
  topicId: opt(z.union([z.string(), z.number()]).transform(String)),
  title: text,
  notes: opt(text),
  type: z.enum(['ONE_TIME', 'RECURRING', 'DAILY_ELIGIBLE']),
  priority: opt(priority),
  recurrenceInterval: opt(z.number().int()),
  recurrenceType: opt(z.enum(RECURRENCE_TYPES)),
  recurrenceWeekdays: opt(z.array(z.number().int().min(0).max(6))),
  recurrenceFixed: opt(z.boolean()),
  dueDate: opt(dateLike),
  nextDueDate: opt(dateLike),
  completedAt: opt(instant),
  coinValue: opt(z.number().int()),
  estimatedMinutes: opt(z.number().int()),
  energyLevel: opt(z.enum(['HIGH', 'MEDIUM', 'LOW'])),
  pausedAt: opt(instant),
  pausedUntil: opt(dateLike),
  createdAt: opt(instant),
});
const refCompletion = z.object({ id: opt(z.union([z.string(), z.number()])), taskId: opt(z.union([z.string(), z.number()]).transform(String)), completedAt: instant });
const refWish = z.object({
  id: z.union([z.string(), z.number()]).transform(String),
  title: text,
  price: opt(z.number()),
  url: opt(z.string()),
  status: opt(z.string()),
  createdAt: opt(instant),
});
const refProfile = z.object({
  coins: opt(z.number()),
  level: opt(z.number()),
  streakCurrent: opt(z.number()),
  streakMax: opt(z.number()),
  notificationEnabled: opt(z.boolean()),
  notificationTime: opt(timeOfDay),
  morningBriefingEnabled: opt(z.boolean()),
  morningBriefingTime: opt(timeOfDay),
  vacationEndDate: opt(dateLike),
  timezone: opt(z.string()),
});

const day = (v: string | null | undefined) => (v ? v.slice(0, 10) : null);

/** Each list item parsed with its schema; the first bad one stops the import with its place. */
function items<T extends z.ZodType>(file: string, list: string, value: unknown, schema: T): { row: number; value: z.infer<T> }[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw fileError({ file, row: null, field: list }, 'must be a list');
  return value.map((v, i) => {
    const r = schema.safeParse(v);
    if (!r.success) {
      const issue = r.error.issues[0]!;
      throw new ImportFileError([{ file, row: i + 1, field: [list, ...issue.path.map(String)].join('.'), message: issue.message }]);
    }
    return { row: i + 1, value: r.data };
  });
}

export function readReferenceExport(file: string, doc: Record<string, unknown>, ctx: ReadContext, plan: ImportPlan, counter: { count: number }): void {
  const at = (list: string, row: number | null, field: string | null): SourceLocation => ({ file, row, field: field ? `${list}.${field}` : list });
  const count = (list: string, row: number) => {
    if (++counter.count > ctx.maxItems) throw fileError(at(list, row, null), `more than ${ctx.maxItems.toLocaleString('en')} items in one import: split the file`);
  };

  const topicKeys = new Map<string, string>();
  for (const { row, value: t } of items(file, 'topics', doc.topics, refTopic)) {
    count('topics', row);
    const key = `momo:topic:${t.id}`;
    topicKeys.set(t.id, key);
    plan.topics.push({
      key,
      at: at('topics', row, 'title'),
      title: t.title,
      description: t.description ?? null,
      color: t.color && /^#[0-9A-Fa-f]{6}$/.test(t.color) ? t.color : null,
      icon: t.icon ? t.icon.slice(0, 64) : null,
      priority: t.priority ?? 'NORMAL',
      archived: t.archived ?? false,
      sequential: t.sequential ?? false,
      defaultEnergyLevel: null,
    });
    if (t.color && !/^#[0-9A-Fa-f]{6}$/.test(t.color)) plan.problems.push({ ...at('topics', row, 'color'), title: t.title, outcome: 'changed', message: `the colour "${t.color}" is not a hex colour like #ff8800: left out` });
  }

  const tasksById = new Map<string, PlannedTask>();
  for (const { row, value: t } of items(file, 'tasks', doc.tasks, refTask)) {
    count('tasks', row);
    const task = plannedTask(`momo:task:${t.id}`, at('tasks', row, 'title'), t.title, {
      notes: t.notes ?? null,
      type: t.type,
      priority: t.priority ?? 'NORMAL',
      dueDate: day(t.dueDate),
      coinValue: Math.min(10, Math.max(1, t.coinValue ?? 1)),
      estimatedMinutes: t.estimatedMinutes && t.estimatedMinutes >= 1 && t.estimatedMinutes <= 1440 ? t.estimatedMinutes : null,
      energyLevel: t.energyLevel ?? null,
      pausedAt: t.pausedAt ?? null,
      pausedUntil: day(t.pausedUntil),
      createdAt: t.createdAt ?? null,
    });
    if (t.topicId) {
      const key = topicKeys.get(t.topicId);
      if (key) task.topicKey = key;
      else plan.problems.push({ ...at('tasks', row, 'topicId'), title: t.title, outcome: 'changed', message: `its topic ${t.topicId} is not in the file: imported without a topic` });
    }
    if (t.coinValue !== undefined && t.coinValue !== null && (t.coinValue < 1 || t.coinValue > 10)) {
      plan.problems.push({ ...at('tasks', row, 'coinValue'), title: t.title, outcome: 'changed', message: `a coin value of ${t.coinValue} is outside 1–10 here: set to ${task.coinValue}` });
    }
    if (t.type === 'RECURRING') readRecurrence(task, t, at('tasks', row, 'recurrenceInterval'), ctx, plan);
    else task.completedAt = t.completedAt ?? null;
    tasksById.set(t.id, task);
    plan.tasks.push(task);
  }

  for (const { row, value: c } of items(file, 'taskCompletions', doc.taskCompletions, refCompletion)) {
    count('taskCompletions', row);
    const task = c.taskId ? tasksById.get(c.taskId) : undefined;
    if (!task) {
      plan.problems.push({ ...at('taskCompletions', row, 'taskId'), title: null, outcome: 'skipped', message: c.taskId ? `its task ${c.taskId} is not in the file` : 'it names no task' });
      continue;
    }
    task.completions.push({ completedAt: new Date(c.completedAt).toISOString(), localDate: localDate(new Date(c.completedAt), ctx.timeZone) });
  }

  const statuses = new Set(['OPEN', 'BOUGHT', 'DISCARDED']);
  for (const { row, value: w } of items(file, 'wishlistItems', doc.wishlistItems, refWish)) {
    count('wishlistItems', row);
    const status = (w.status ?? 'OPEN').toUpperCase();
    if (!statuses.has(status)) {
      plan.problems.push({ ...at('wishlistItems', row, 'status'), title: w.title, outcome: 'changed', message: `unknown status "${w.status}": imported as open` });
    }
    const price = Math.max(0, Math.min(1_000_000, Math.round(w.price ?? 0)));
    const url = w.url && /^https?:\/\//i.test(w.url) ? w.url.slice(0, 2000) : null;
    if (w.url && !url) plan.problems.push({ ...at('wishlistItems', row, 'url'), title: w.title, outcome: 'changed', message: 'the link is not an http(s) URL: left out' });
    plan.wishlist.push({
      key: `momo:wish:${w.id}`,
      at: at('wishlistItems', row, 'title'),
      title: w.title.trim().slice(0, 200) || 'Wish',
      price,
      url,
      status: statuses.has(status) ? (status as 'OPEN') : 'OPEN',
      createdAt: w.createdAt ?? null,
      closedAt: status !== 'OPEN' && statuses.has(status) ? (w.createdAt ?? null) : null,
    });
  }

  if (doc.profile !== undefined && doc.profile !== null) {
    const r = refProfile.safeParse(doc.profile);
    if (!r.success) {
      const issue = r.error.issues[0]!;
      throw new ImportFileError([{ file, row: null, field: ['profile', ...issue.path.map(String)].join('.'), message: issue.message }]);
    }
    const p = r.data;
    const settings: PlannedSettings = {};
    // the reference's one switch covers the quest reminder, the streak reminder and the weekly review: here each has its own
    if (p.notificationEnabled != null) Object.assign(settings, { notificationEnabled: p.notificationEnabled, streakReminderEnabled: p.notificationEnabled, weeklyReviewEnabled: p.notificationEnabled });
    if (p.notificationTime) settings.notificationTime = p.notificationTime.slice(0, 5);
    if (p.morningBriefingEnabled != null) settings.morningBriefingEnabled = p.morningBriefingEnabled;
    if (p.morningBriefingTime) settings.morningBriefingTime = p.morningBriefingTime.slice(0, 5);
    if (p.vacationEndDate && day(p.vacationEndDate)! >= ctx.today) {
      settings.vacationStartDate = ctx.today;
      settings.vacationEndDate = day(p.vacationEndDate);
    }
    if (Object.keys(settings).length > 0) plan.settings = settings;
    if ((p.coins ?? 0) > 0 || (p.streakCurrent ?? 0) > 0) {
      plan.problems.push({ file, row: null, field: 'profile.coins', title: null, outcome: 'skipped', message: `coins (${p.coins ?? 0}), level and streaks are earned here, not brought over` });
    }
  }
  const achievements = Array.isArray(doc.achievements) ? doc.achievements.length : 0;
  if (achievements > 0) plan.problems.push({ file, row: null, field: 'achievements', title: null, outcome: 'skipped', message: `${achievements} achievement(s) are earned here, not brought over` });
  const log = Array.isArray(doc.notificationLog) ? doc.notificationLog.length : 0;
  if (log > 0) plan.problems.push({ file, row: null, field: 'notificationLog', title: null, outcome: 'skipped', message: `${log} entries of the notification log are not imported (a record of messages sent, not data to work with)` });
}

function readRecurrence(task: PlannedTask, t: z.infer<typeof refTask>, at: SourceLocation, ctx: ReadContext, plan: ImportPlan): void {
  const named = t.recurrenceType ?? null;
  const rule: RecurrenceRule = {
    type: named ?? 'INTERVAL',
    interval: t.recurrenceInterval ?? 1,
    weekdays: named === 'WEEKDAY' || named === 'NTH_WEEKDAY' ? (t.recurrenceWeekdays ?? []) : [],
    weekOfMonth: null,
    fixed: t.recurrenceFixed ?? false,
  };
  const next = day(t.nextDueDate) ?? day(t.dueDate) ?? ctx.today;
  const source = named ? `${named} every ${rule.interval}${rule.weekdays.length ? ` on weekdays ${rule.weekdays.join(',')}` : ''}` : `every ${rule.interval} day(s)`;
  task.type = 'RECURRING';
  task.rule = rule;
  // the exported next due date is where the schedule stands: it stays the anchor
  task.anchor = next;
  task.nextDueDate = next;
  task.dueDate = day(t.dueDate) ?? next;
  try {
    const state = startSchedule(rule, next);
    task.nextDueDate = state.nextDueDate;
  } catch {
    // an invalid rule is reported by fitToModel
  }
  const inWords = ctx.describe(rule, task.nextDueDate);
  const guessed = named ? '' : ' (the export names only the interval: if it repeated on weekdays, monthly or yearly, set that after the import)';
  plan.recurrences.push({ ...at, title: task.title, source, outcome: 'mapped', rule, message: `${inWords}; next due ${task.nextDueDate}${guessed}` });
}
