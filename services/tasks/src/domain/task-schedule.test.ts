import { describe, expect, it } from 'vitest';
import { completionCoins, postponedDueDate, resolveRecurrence, type RecurrenceInput } from './task-schedule.ts';

const input = (r: Partial<RecurrenceInput>): RecurrenceInput => ({
  type: 'RECURRING',
  recurrenceType: null,
  recurrenceInterval: null,
  recurrenceWeekdays: null,
  recurrenceWeekOfMonth: null,
  recurrenceFixed: false,
  dueDate: null,
  ...r,
});

describe('resolveRecurrence', () => {
  it('non-recurring tasks carry no rule, and a stray rule field is reported by name', () => {
    expect(resolveRecurrence(input({ type: 'ONE_TIME' }), '2026-11-22')).toMatchObject({ ok: true, columns: { recurrenceType: null, nextDueDate: null, recurrenceAnchor: null } });
    const bad = resolveRecurrence(input({ type: 'DAILY_ELIGIBLE', recurrenceType: 'MONTHLY', recurrenceInterval: 2 }), '2026-11-22');
    expect(bad.ok ? [] : bad.issues.map((i) => i.field)).toEqual(['recurrenceType', 'recurrenceInterval']);
  });

  it('a RECURRING task without a rule recurs daily from its start (reference default)', () => {
    expect(resolveRecurrence(input({}), '2026-11-22')).toEqual({
      ok: true,
      columns: { recurrenceType: 'INTERVAL', recurrenceInterval: 1, recurrenceWeekdays: null, recurrenceWeekOfMonth: null, recurrenceFixed: false, recurrenceAnchor: '2026-11-22', nextDueDate: '2026-11-22' },
    });
  });

  it('starts on the first schedule date on or after the start, weekdays normalised', () => {
    const r = resolveRecurrence(input({ recurrenceType: 'WEEKDAY', recurrenceWeekdays: [6, 2], recurrenceFixed: true }), '2026-11-23'); // a Monday
    expect(r).toMatchObject({ ok: true, columns: { recurrenceWeekdays: [2, 6], nextDueDate: '2026-11-25', recurrenceAnchor: '2026-11-23', recurrenceFixed: true } });
    const last = resolveRecurrence(input({ recurrenceType: 'NTH_WEEKDAY', recurrenceWeekdays: [4], recurrenceWeekOfMonth: -1 }), '2026-11-28');
    expect(last).toMatchObject({ ok: true, columns: { nextDueDate: '2026-12-25' } });
  });

  it('reports invalid rules by field', () => {
    const r = resolveRecurrence(input({ recurrenceType: 'NTH_WEEKDAY', recurrenceWeekdays: [1, 2] }), '2026-11-22');
    expect(r.ok ? [] : r.issues.map((i) => i.field)).toEqual(['recurrenceWeekdays', 'recurrenceWeekOfMonth']);
  });
});

describe('completionCoins', () => {
  it('doubles from the third postponement on', () => {
    expect([0, 1, 2, 3, 4, 10].map((p) => completionCoins(3, p))).toEqual([3, 3, 3, 6, 6, 6]);
  });
});

describe('postponedDueDate', () => {
  it('moves an earlier or same-day deadline to tomorrow, keeps a later one, leaves undated tasks undated', () => {
    expect(postponedDueDate('2026-11-20', '2026-11-25')).toBe('2026-11-25');
    expect(postponedDueDate('2026-11-24', '2026-11-25')).toBe('2026-11-25');
    expect(postponedDueDate('2026-11-27', '2026-11-25')).toBe('2026-11-27');
    expect(postponedDueDate(null, '2026-11-25')).toBeNull();
  });
});
