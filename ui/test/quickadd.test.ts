import { describe, expect, it } from 'vitest';
import { parseQuickAdd, parseQuickAddWithParts } from '../src/lib/quickadd.ts';

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

  it('reads natural dates: "tomorrow 9am", "next fri", "on friday", "in 3 days"; the time stays in the title', () => {
    const r = parseQuickAddWithParts('Call the bank tomorrow 9am', TODAY);
    expect(r).toMatchObject({ title: 'Call the bank 9am', dueDate: '2026-11-19' });
    expect(r.parts.map((p) => [p.kind, p.text])).toEqual([
      ['date', 'tomorrow'],
      ['time', '9am'],
    ]);
    expect(parseQuickAdd('Taxes next fri', TODAY)).toEqual({ title: 'Taxes', dueDate: '2026-11-20' });
    expect(parseQuickAdd('Taxes on Friday', TODAY)).toEqual({ title: 'Taxes', dueDate: '2026-11-20' });
    expect(parseQuickAdd('Taxes in 3 days', TODAY)).toEqual({ title: 'Taxes', dueDate: '2026-11-21' });
    // Short weekday names alone are ordinary words ("sat nav").
    expect(parseQuickAdd('Buy a sat nav', TODAY)).toEqual({ title: 'Buy a sat nav' });
  });

  it('reads natural recurrence: "every 2nd tue", "every other fri", "every 3 days", "every week"', () => {
    expect(parseQuickAdd('Standup every 2nd tue', TODAY)).toEqual({ title: 'Standup', type: 'RECURRING', recurrenceType: 'NTH_WEEKDAY', recurrenceInterval: 1, recurrenceWeekdays: [1], recurrenceWeekOfMonth: 2 });
    expect(parseQuickAdd('Bins every other fri', TODAY)).toMatchObject({ recurrenceType: 'WEEKDAY', recurrenceInterval: 2, recurrenceWeekdays: [4] });
    expect(parseQuickAdd('Water every 3 days', TODAY)).toMatchObject({ title: 'Water', recurrenceType: 'INTERVAL', recurrenceInterval: 3 });
    expect(parseQuickAdd('Review every week friday', TODAY)).toMatchObject({ recurrenceType: 'WEEKDAY', recurrenceWeekdays: [4], dueDate: '2026-11-20' });
    expect(parseQuickAddWithParts('Standup every last fri', TODAY).parts[0]).toMatchObject({ kind: 'recurrence', text: 'every last fri', label: 'Every last Friday of the month' });
  });
});
