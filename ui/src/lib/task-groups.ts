import type { Task } from './types.ts';

export type TaskGroupName = 'Overdue' | 'Today' | 'Upcoming' | 'Someday' | 'Completed';
export interface TaskGroup {
  name: TaskGroupName;
  tasks: Task[];
}

const ORDER: TaskGroupName[] = ['Overdue', 'Today', 'Upcoming', 'Someday', 'Completed'];
const PRIORITY_RANK: Record<Task['priority'], number> = { HIGH: 0, NORMAL: 1, SOMEDAY: 2 };

/** The date a task is due on: the next occurrence for a recurring task. */
export const effectiveDue = (t: Task): string | null => (t.type === 'RECURRING' ? t.nextDueDate : t.dueDate);

function groupOf(t: Task, today: string): TaskGroupName {
  if (t.completedAt) return 'Completed';
  const due = effectiveDue(t);
  if (!due) return 'Someday';
  return due < today ? 'Overdue' : due === today ? 'Today' : 'Upcoming';
}

/**
 * The task list the way people scan it: Overdue, Today, Upcoming, Someday (no date), then Completed;
 * within a group by priority, then due date, then the person's own order. Empty groups are left out.
 */
export function groupTasks(tasks: readonly Task[], today: string): TaskGroup[] {
  const groups = new Map<TaskGroupName, Task[]>(ORDER.map((n) => [n, []]));
  for (const t of tasks) groups.get(groupOf(t, today))!.push(t);
  const byPriorityThenDate = (a: Task, b: Task) =>
    PRIORITY_RANK[a.priority] - PRIORITY_RANK[b.priority] || (effectiveDue(a) ?? '').localeCompare(effectiveDue(b) ?? '') || a.sortOrder - b.sortOrder;
  return ORDER.map((name) => ({ name, tasks: groups.get(name)!.sort(name === 'Completed' ? (a, b) => (b.completedAt ?? '').localeCompare(a.completedAt ?? '') : byPriorityThenDate) })).filter((g) => g.tasks.length > 0);
}
