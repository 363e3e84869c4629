import { describe, expect, it } from 'vitest';
import { coinsFor, openSubtasks, parentAfterSubtask, topicTitleOf } from './subtasks.ts';

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

  it("a promoted task's title fits a topic's: shortened at a word near the end, with an ellipsis", () => {
    expect(topicTitleOf('  Paint the hall ', 100)).toBe('Paint the hall');
    expect(topicTitleOf('a'.repeat(100), 100)).toBe('a'.repeat(100));
    expect(topicTitleOf('a'.repeat(101), 100)).toBe(`${'a'.repeat(99)}…`);
    const words = 'Renovate the whole flat before the family visits in the spring, including the kitchen and the two bathrooms';
    const short = topicTitleOf(words, 100);
    expect(Array.from(short).length).toBeLessThanOrEqual(100);
    expect(short).toBe('Renovate the whole flat before the family visits in the spring, including the kitchen and the two…');
    // a character outside the BMP counts once and is never cut in half
    expect(topicTitleOf('🎨'.repeat(120), 100)).toBe(`${'🎨'.repeat(99)}…`);
  });
});
