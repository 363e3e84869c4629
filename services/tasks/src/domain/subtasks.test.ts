import { describe, expect, it } from 'vitest';
import { coinsFor, openSubtasks, parentAfterSubtask } from './subtasks.ts';

describe('subtask rules (pure)', () => {
  it('a subtask earns no coins; a task its value, doubled after 3 postponements', () => {
    expect(coinsFor({ parentId: 'p', coinValue: 10, postponeCount: 5 })).toBe(0);
    expect(coinsFor({ parentId: null, coinValue: 3, postponeCount: 2 })).toBe(3);
    expect(coinsFor({ parentId: null, coinValue: 3, postponeCount: 3 })).toBe(6);
  });

  it('the parent after a subtask is done: completed (setting) or offered once all are done, else left alone', () => {
    const parent = (done: number, count = 3, completedAt: Date | null = null) => ({ subtaskCount: count, subtasksDone: done, completedAt });
    expect(openSubtasks(parent(1))).toBe(2);
    expect(parentAfterSubtask(parent(2), true)).toBe('none');
    expect(parentAfterSubtask(parent(3), false)).toBe('offer');
    expect(parentAfterSubtask(parent(3), true)).toBe('complete');
    expect(parentAfterSubtask(parent(3, 3, new Date()), true), 'done already').toBe('none');
    expect(parentAfterSubtask(parent(0, 0), true), 'no subtasks (moved out meanwhile)').toBe('none');
  });
});
