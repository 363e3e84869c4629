import type { Task } from './types.ts';

export type TaskGroupName = 'Overdue' | 'Today' | 'Upcoming' | 'Someday' | 'Snoozed' | 'Paused' | 'Completed';
export interface TaskGroup {
  name: TaskGroupName;
  tasks: Task[];
}

const ORDER: TaskGroupName[] = ['Overdue', 'Today', 'Upcoming', 'Someday', 'Snoozed', 'Paused', 'Completed'];
const PRIORITY_RANK: Record<Task['priority'], number> = { HIGH: 0, NORMAL: 1, SOMEDAY: 2 };

/** The date a task is due on: the next occurrence for a recurring task. */
export const effectiveDue = (t: Task): string | null => (t.type === 'RECURRING' ? t.nextDueDate : t.dueDate);

/** Snoozed beyond today: out of sight until it wakes. */
export const isSnoozed = (t: Task, today: string): boolean => t.snoozedUntil !== null && t.snoozedUntil > today;
/** Paused until resumed, or until its `pausedUntil` day (the server's rule: that day it counts again). */
export const isPaused = (t: Task, today: string): boolean => t.pausedAt !== null && (t.pausedUntil === null || t.pausedUntil > today);

function groupOf(t: Task, today: string): TaskGroupName {
  if (t.completedAt) return 'Completed';
  // Set aside on purpose: neither overdue nor due while it waits (it would sit atop Overdue otherwise).
  if (isPaused(t, today)) return 'Paused';
  if (isSnoozed(t, today)) return 'Snoozed';
  const due = effectiveDue(t);
  if (!due) return 'Someday';
  return due < today ? 'Overdue' : due === today ? 'Today' : 'Upcoming';
}

/** Priority first, then due date (a recurring task's next one), then the person's own order. */
export const byPriorityThenDate = (a: Task, b: Task): number =>
  PRIORITY_RANK[a.priority] - PRIORITY_RANK[b.priority] || (effectiveDue(a) ?? '').localeCompare(effectiveDue(b) ?? '') || a.sortOrder - b.sortOrder;

/**
 * The task list the way people scan it: Overdue, Today, Upcoming, Someday (no date), Snoozed, Paused,
 * then Completed; within a group by priority, then due date, then the person's own order. Empty groups
 * are left out.
 */
export function groupTasks(tasks: readonly Task[], today: string): TaskGroup[] {
  const groups = new Map<TaskGroupName, Task[]>(ORDER.map((n) => [n, []]));
  for (const t of tasks) groups.get(groupOf(t, today))!.push(t);
  return ORDER.map((name) => ({ name, tasks: groups.get(name)!.sort(name === 'Completed' ? (a, b) => (b.completedAt ?? '').localeCompare(a.completedAt ?? '') : byPriorityThenDate) })).filter((g) => g.tasks.length > 0);
}

export type TaskSort = 'grouped' | 'due' | 'priority' | 'title' | 'newest' | 'order';
export const TASK_SORTS: [TaskSort, string][] = [
  ['grouped', 'Grouped by when'],
  ['due', 'Due date'],
  ['priority', 'Priority'],
  ['title', 'Title (A–Z)'],
  ['newest', 'Newest first'],
  ['order', 'My order'],
];

/** A flat list in one order (every sort but "grouped"); undated tasks last when sorting by date. */
export function sortTasks(tasks: readonly Task[], sort: Exclude<TaskSort, 'grouped'>): Task[] {
  const cmp: Record<typeof sort, (a: Task, b: Task) => number> = {
    due: (a, b) => (effectiveDue(a) ?? '\uffff').localeCompare(effectiveDue(b) ?? '\uffff') || (a.dueTime ?? '99').localeCompare(b.dueTime ?? '99') || PRIORITY_RANK[a.priority] - PRIORITY_RANK[b.priority],
    priority: byPriorityThenDate,
    title: (a, b) => a.title.localeCompare(b.title, undefined, { sensitivity: 'base', numeric: true }),
    newest: (a, b) => b.createdAt.localeCompare(a.createdAt),
    order: (a, b) => a.sortOrder - b.sortOrder || a.createdAt.localeCompare(b.createdAt),
  };
  return [...tasks].sort(cmp[sort]);
}
