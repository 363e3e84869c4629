import { describe, expect, it } from 'vitest';
import { groupTasks, sortTasks } from '../src/lib/task-groups.ts';
import type { Task } from '../src/lib/types.ts';

const TODAY = '2026-11-18';
let n = 0;
const task = (title: string, over: Partial<Task> = {}): Task =>
  ({ id: `t${++n}`, title, type: 'ONE_TIME', priority: 'NORMAL', dueDate: null, nextDueDate: null, completedAt: null, snoozedUntil: null, pausedAt: null, pausedUntil: null, dueTime: null, createdAt: `2026-11-0${n % 9}T10:00:00Z`, sortOrder: n, ...over }) as Task;

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

  it('puts a snoozed or paused overdue task in its own group, not atop Overdue (bug 10); it is back once it wakes', () => {
    const groups = groupTasks(
      [
        task('snoozed', { dueDate: '2026-11-01', priority: 'HIGH', snoozedUntil: '2026-11-20' }),
        task('paused', { dueDate: '2026-11-02', pausedAt: '2026-11-10T08:00:00Z' }),
        task('paused until today', { dueDate: '2026-11-03', pausedAt: '2026-11-10T08:00:00Z', pausedUntil: TODAY }),
        task('woke today', { dueDate: '2026-11-04', snoozedUntil: TODAY }),
        task('late', { dueDate: '2026-11-05' }),
      ],
      TODAY,
    );
    expect(groups.map((g) => [g.name, g.tasks.map((t) => t.title)])).toEqual([
      ['Overdue', ['paused until today', 'woke today', 'late']],
      ['Snoozed', ['snoozed']],
      ['Paused', ['paused']],
    ]);
  });

  it('sorts a flat list by due date (time, then priority; undated last), priority, title, newest or own order', () => {
    const list = [
      task('b undated', { priority: 'HIGH', createdAt: '2026-11-03T00:00:00Z', sortOrder: 2 }),
      task('A late', { dueDate: '2026-11-30', createdAt: '2026-11-01T00:00:00Z', sortOrder: 3 }),
      task('c early evening', { dueDate: '2026-11-19', dueTime: '18:00', createdAt: '2026-11-02T00:00:00Z', sortOrder: 1 }),
      task('d early morning', { dueDate: '2026-11-19', dueTime: '08:00', priority: 'SOMEDAY', createdAt: '2026-11-04T00:00:00Z', sortOrder: 0 }),
    ];
    const titles = (s: Parameters<typeof sortTasks>[1]) => sortTasks(list, s).map((t) => t.title);
    expect(titles('due')).toEqual(['d early morning', 'c early evening', 'A late', 'b undated']);
    expect(titles('priority')).toEqual(['b undated', 'c early evening', 'A late', 'd early morning']);
    expect(titles('title')).toEqual(['A late', 'b undated', 'c early evening', 'd early morning']);
    expect(titles('newest')).toEqual(['d early morning', 'b undated', 'c early evening', 'A late']);
    expect(titles('order')).toEqual(['d early morning', 'c early evening', 'b undated', 'A late']);
  });

  it('leaves empty groups out', () => {
    expect(groupTasks([], TODAY)).toEqual([]);
  });
});
