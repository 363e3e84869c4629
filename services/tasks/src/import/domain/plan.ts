import { createHash } from 'node:crypto';
import type { ImportCount, ImportFormat, ImportKind, ImportProblem, ImportRecurrence } from '@tasksvc/proto';
import type { Reminder } from '@tasksvc/proto/calendar/reminders.ts';
import { validateRule, type RecurrenceRule } from '@tasksvc/proto/calendar/recurrence.ts';

/**
 * The normalised import plan every format's reader produces (pure data, no I/O): what would be
 * written, with the source key of each item (so a second import of the same file adds nothing),
 * and every row that cannot come over as it is. The preview shows it; the confirm writes it.
 */

export type Priority = 'HIGH' | 'NORMAL' | 'SOMEDAY';
export type TaskType = 'ONE_TIME' | 'RECURRING' | 'DAILY_ELIGIBLE';
export type Energy = 'HIGH' | 'MEDIUM' | 'LOW';

/** Where an item is in the file(s): the file (a ZIP's member), its 1-based row, line or position in its list, the column or property. */
export interface SourceLocation {
  file: string;
  row: number | null;
  field: string | null;
}

export interface PlannedTopic {
  key: string;
  at: SourceLocation;
  title: string;
  description: string | null;
  color: string | null;
  icon: string | null;
  priority: Priority;
  archived: boolean;
  sequential: boolean;
  defaultEnergyLevel: Energy | null;
  /** this app's own export: the topic's place in the list */
  sortOrder?: number;
  /** this app's own export: when the topic was made (ISO instant) */
  createdAt?: string;
}

export interface PlannedCompletion {
  /** ISO instant */
  completedAt: string;
  /** the completion's day in the user's zone */
  localDate: string;
  /** this app's own export: what it granted there (part of the balance restored with it); 0 elsewhere */
  coinsAwarded?: number;
  wasDailyQuest?: boolean;
}

export interface PlannedTask {
  key: string;
  at: SourceLocation;
  title: string;
  notes: string | null;
  type: TaskType;
  priority: Priority;
  topicKey: string | null;
  /** a subtask's parent (its key); null for a top-level task */
  parentKey: string | null;
  dueDate: string | null;
  /** "HH:MM" in the user's zone, with a due date (kept where tasks here have a time of day) */
  dueTime: string | null;
  reminders: Reminder[];
  /** RECURRING: the rule, and where its schedule stands (anchor and next due date) */
  rule: RecurrenceRule | null;
  anchor: string | null;
  nextDueDate: string | null;
  /** ISO instant; ONE_TIME and DAILY_ELIGIBLE only */
  completedAt: string | null;
  estimatedMinutes: number | null;
  energyLevel: Energy | null;
  coinValue: number;
  snoozedUntil: string | null;
  pausedAt: string | null;
  pausedUntil: string | null;
  postponeCount: number;
  /** the item's creation in its source (ISO instant), kept where the source has one */
  createdAt: string | null;
  completions: PlannedCompletion[];
  /** this app's own export: the task's id there (a task of this very account is not added again) */
  ownId?: string | undefined;
  /** this app's own export: the task's place in the list */
  sortOrder?: number;
}

export interface PlannedWishlistItem {
  key: string;
  at: SourceLocation;
  title: string;
  price: number;
  url: string | null;
  status: 'OPEN' | 'BOUGHT' | 'DISCARDED';
  createdAt: string | null;
  closedAt: string | null;
}

export interface PlannedCheckin {
  key: string;
  localDate: string;
  level: Energy;
  /** this app's own export: when it was checked in (ISO instant) */
  createdAt?: string;
}

/** Profile settings a file carries (only those it names are set). */
export interface PlannedSettings {
  timezone?: string;
  energyLevel?: Energy;
  vacationStartDate?: string | null;
  vacationEndDate?: string | null;
  postponeLimit?: number;
  notificationEnabled?: boolean;
  notificationTime?: string;
  dueTodayReminderEnabled?: boolean;
  dueTodayReminderTime?: string;
  recurringDueReminderEnabled?: boolean;
  recurringDueReminderTime?: string;
  overdueReminderEnabled?: boolean;
  overdueReminderTime?: string;
  morningBriefingEnabled?: boolean;
  morningBriefingTime?: string;
  weeklyReviewTime?: string;
  streakReminderTime?: string;
  streakReminderEnabled?: boolean;
  weeklyReviewEnabled?: boolean;
}

/** Game progress of this app's own export, restored as it was (never earned anew). */
export interface PlannedProgress {
  coins: number;
  totalTasksCreated: number;
  streakCurrent: number;
  streakMax: number;
  streakLastDate: string | null;
  streakShieldUsedMonth: string | null;
  questStreakCurrent: number;
  questStreakMax: number;
  questStreakLastDate: string | null;
  achievements: { key: string; coinsAwarded: number; unlockedAt: string }[];
}

export interface ImportPlan {
  format: ImportFormat;
  files: string[];
  topics: PlannedTopic[];
  tasks: PlannedTask[];
  wishlist: PlannedWishlistItem[];
  checkins: PlannedCheckin[];
  settings: PlannedSettings | null;
  progress: PlannedProgress | null;
  problems: ImportProblem[];
  recurrences: ImportRecurrence[];
}

export function emptyPlan(format: ImportFormat, files: string[]): ImportPlan {
  return { format, files, topics: [], tasks: [], wishlist: [], checkins: [], settings: null, progress: null, problems: [], recurrences: [] };
}

/** A file that cannot be read at all: the import answers 400 naming each place, and writes nothing. */
export class ImportFileError extends Error {
  readonly issues: (SourceLocation & { message: string })[];
  constructor(issues: (SourceLocation & { message: string })[]) {
    super(issues.map(describeIssue).join('; '));
    this.name = 'ImportFileError';
    this.issues = issues;
  }
}

/** "Work.csv, row 12, DATE: …" */
export function describeIssue(i: SourceLocation & { message: string }): string {
  return [i.file, i.row !== null ? `row ${i.row}` : null, i.field].filter(Boolean).join(', ') + `: ${i.message}`;
}

export function fileError(at: SourceLocation, message: string): ImportFileError {
  return new ImportFileError([{ ...at, message }]);
}

/** A stable, short source key from its parts (a row's content where the source has no ids). */
export function digestKey(prefix: string, ...parts: string[]): string {
  return `${prefix}:${createHash('sha256').update(parts.join('\u0000')).digest('hex').slice(0, 32)}`;
}

/** Keys made unique in order of appearance: the nth identical row gets `#n` (two "Buy milk" rows stay two tasks). */
export function uniqueKeys(): (key: string) => string {
  const seen = new Map<string, number>();
  return (key) => {
    const n = (seen.get(key) ?? 0) + 1;
    seen.set(key, n);
    return n === 1 ? key : `${key}#${n}`;
  };
}

export const TITLE_MAX = 255;
export const NOTES_MAX = 5000;
export const TOPIC_TITLE_MAX = 100;

/** A task with the defaults of a plain one-time task. */
export function plannedTask(key: string, at: SourceLocation, title: string, fields: Partial<PlannedTask> = {}): PlannedTask {
  return {
    key,
    at,
    title,
    notes: null,
    type: 'ONE_TIME',
    priority: 'NORMAL',
    topicKey: null,
    parentKey: null,
    dueDate: null,
    dueTime: null,
    reminders: [],
    rule: null,
    anchor: null,
    nextDueDate: null,
    completedAt: null,
    estimatedMinutes: null,
    energyLevel: null,
    coinValue: 1,
    snoozedUntil: null,
    pausedAt: null,
    pausedUntil: null,
    postponeCount: 0,
    createdAt: null,
    completions: [],
    ...fields,
  };
}

/**
 * Fit a plan to this app's limits, reporting each change: titles and notes too long are shortened,
 * an empty title becomes the first line of the notes (or the row is skipped), a rule the model
 * cannot hold drops the repetition.
 */
export function fitToModel(plan: ImportPlan): ImportPlan {
  const tasks: PlannedTask[] = [];
  for (const t of plan.tasks) {
    const changed = (field: string, message: string) => plan.problems.push({ ...t.at, field, title: t.title || null, outcome: 'changed', message });
    let title = t.title.replace(/\s+/g, ' ').trim();
    if (!title) {
      plan.problems.push({ ...t.at, title: null, outcome: 'skipped', message: 'it has no title' });
      continue;
    }
    if (title.length > TITLE_MAX) {
      changed(t.at.field ?? 'title', `the title is longer than ${TITLE_MAX} characters: shortened, the whole title is kept in the notes`);
      t.notes = t.notes ? `${t.title}\n\n${t.notes}` : t.title;
      title = `${title.slice(0, TITLE_MAX - 1)}…`;
    }
    t.title = title;
    if (t.notes !== null && t.notes.length > NOTES_MAX) {
      changed('notes', `the notes are longer than ${NOTES_MAX} characters: shortened`);
      t.notes = `${t.notes.slice(0, NOTES_MAX - 1)}…`;
    }
    if (t.rule && validateRule(t.rule).length > 0) {
      changed('recurrence', `its repetition cannot be held here (${validateRule(t.rule).map((i) => i.message).join('; ')}): imported without repeating`);
      t.rule = null;
      t.type = 'ONE_TIME';
      t.dueDate = t.nextDueDate ?? t.dueDate;
      t.anchor = t.nextDueDate = null;
    }
    tasks.push(t);
  }
  plan.tasks = tasks;
  for (const topic of plan.topics) {
    const title = topic.title.replace(/\s+/g, ' ').trim() || 'Imported';
    topic.title = title.length > TOPIC_TITLE_MAX ? `${title.slice(0, TOPIC_TITLE_MAX - 1)}…` : title;
  }
  return plan;
}

/** What a plan would add, per kind (`alreadyImported` filled in by the caller that knows the account). */
export function planCounts(plan: ImportPlan, already: (key: string) => boolean = () => false): ImportCount[] {
  const count = (kind: ImportKind, keys: string[]): ImportCount => {
    let done = 0;
    for (const k of keys) if (already(k)) done++;
    return { kind, toImport: keys.length - done, alreadyImported: done };
  };
  const top = plan.tasks.filter((t) => !t.parentKey);
  const sub = plan.tasks.filter((t) => t.parentKey);
  const counts = [
    count('topics', plan.topics.map((t) => t.key)),
    count('tasks', top.map((t) => t.key)),
    count('subtasks', sub.map((t) => t.key)),
    {
      kind: 'completions' as const,
      toImport: plan.tasks.filter((t) => !already(t.key)).reduce((n, t) => n + t.completions.length, 0),
      alreadyImported: plan.tasks.filter((t) => already(t.key)).reduce((n, t) => n + t.completions.length, 0),
    },
    count('wishlistItems', plan.wishlist.map((w) => w.key)),
    count('energyCheckins', plan.checkins.map((c) => c.key)),
    { kind: 'settings' as const, toImport: plan.settings ? Object.keys(plan.settings).length : 0, alreadyImported: 0 },
    { kind: 'progress' as const, toImport: plan.progress ? 1 : 0, alreadyImported: 0 },
  ];
  return counts;
}

/** Every item a plan would write, for progress (a task with its history counts once). */
export const planSize = (plan: ImportPlan): number => plan.topics.length + plan.tasks.length + plan.wishlist.length + plan.checkins.length;

/** A digest of everything the confirm would write: it imports only the plan the person saw. */
export function planDigest(plan: ImportPlan): string {
  const { problems: _p, recurrences: _r, ...written } = plan;
  return createHash('sha256').update(JSON.stringify(written)).digest('hex');
}
