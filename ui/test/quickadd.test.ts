import { describe, expect, it } from 'vitest';
import { parseQuickAdd } from '../src/lib/quickadd.ts';

// 2026-11-18 is a Wednesday.
const TODAY = '2026-11-18';
const topics = [
  { id: 't-home', title: 'Home' },
  { id: 't-work', title: 'Work projects' },
];

describe('quick add parser', () => {
  it('keeps plain text as the title', () => {
    expect(parseQuickAdd('  Buy milk  ', TODAY)).toEqual({ title: 'Buy milk' });
  });

  it('reads priority, dates, topics and recurrence tokens anywhere in the line', () => {
    expect(parseQuickAdd('Pay rent @2026-12-01 !high #home *monthly', TODAY, topics)).toEqual({
      title: 'Pay rent',
      priority: 'HIGH',
      dueDate: '2026-12-01',
      topicId: 't-home',
      type: 'RECURRING',
      recurrenceType: 'MONTHLY',
      recurrenceInterval: 1,
    });
    expect(parseQuickAdd('Report #work !s @tomorrow', TODAY, topics)).toMatchObject({ title: 'Report', topicId: 't-work', priority: 'SOMEDAY', dueDate: '2026-11-19' });
  });

  it('weekday tokens mean the next such day, never today', () => {
    expect(parseQuickAdd('x @fri', TODAY).dueDate).toBe('2026-11-20');
    expect(parseQuickAdd('x @wed', TODAY).dueDate).toBe('2026-11-25');
    expect(parseQuickAdd('x @monday', TODAY).dueDate).toBe('2026-11-23');
  });

  it('a weekly task repeats on the weekday of its due date (0 = Monday)', () => {
    expect(parseQuickAdd('Gym *weekly @fri', TODAY)).toMatchObject({ recurrenceType: 'WEEKDAY', recurrenceWeekdays: [4], dueDate: '2026-11-20' });
    expect(parseQuickAdd('Gym *weekly', TODAY)).toMatchObject({ recurrenceWeekdays: [2] });
  });

  it('unknown topics and stray symbols stay in the title', () => {
    expect(parseQuickAdd('Email #nobody about !things', TODAY, topics)).toEqual({ title: 'Email #nobody about !things' });
  });
});
