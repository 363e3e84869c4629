import { describe, expect, it } from 'vitest';
import { groupTasks } from '../src/lib/task-groups.ts';
import type { Task } from '../src/lib/types.ts';

const TODAY = '2026-11-18';
let n = 0;
const task = (title: string, over: Partial<Task> = {}): Task =>
  ({ id: `t${++n}`, title, type: 'ONE_TIME', priority: 'NORMAL', dueDate: null, nextDueDate: null, completedAt: null, sortOrder: n, ...over }) as Task;

describe('task list groups', () => {
  it('puts an overdue task first however the list came in (it was 10th of 13), then today, upcoming, undated, completed', () => {
    const tasks = [
      ...Array.from({ length: 9 }, (_, i) => task(`later ${i}`, { dueDate: `2026-12-0${i + 1}` })),
      task('overdue', { dueDate: '2026-11-10' }),
      task('no date'),
      task('done', { completedAt: '2026-11-17T10:00:00Z', dueDate: '2026-11-01' }),
      task('today', { dueDate: TODAY }),
    ];
    const groups = groupTasks(tasks, TODAY);
    expect(groups.map((g) => g.name)).toEqual(['Overdue', 'Today', 'Upcoming', 'Someday', 'Completed']);
    expect(groups[0]!.tasks.map((t) => t.title)).toEqual(['overdue']);
    expect(groups[2]!.tasks).toHaveLength(9);
    expect(groups.flatMap((g) => g.tasks)).toHaveLength(tasks.length);
  });

  it('orders within a group by priority, then due date, then the own order; a recurring task by its next date', () => {
    const groups = groupTasks(
      [
        task('normal early', { dueDate: '2026-11-20' }),
        task('someday prio', { dueDate: '2026-11-19', priority: 'SOMEDAY' }),
        task('high late', { dueDate: '2026-11-30', priority: 'HIGH' }),
        task('recurring today', { type: 'RECURRING', dueDate: '2026-11-01', nextDueDate: TODAY }),
      ],
      TODAY,
    );
    expect(groups.map((g) => [g.name, g.tasks.map((t) => t.title)])).toEqual([
      ['Today', ['recurring today']],
      ['Upcoming', ['high late', 'normal early', 'someday prio']],
    ]);
  });

  it('leaves empty groups out', () => {
    expect(groupTasks([], TODAY)).toEqual([]);
  });
});
