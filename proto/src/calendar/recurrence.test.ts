import { describe, expect, it } from 'vitest';
import { addDays, daysInMonth, monthIndex, parseDate, weekday, weekIndex, dayNumber, localDate, type LocalDate } from './dates.ts';
import { advanceOnCompletion, occurrenceAfter, upcoming, validateRule, type RecurrenceRule } from './recurrence.ts';

const rule = (r: Partial<RecurrenceRule> & Pick<RecurrenceRule, 'type'>): RecurrenceRule => ({ interval: 1, weekdays: [], weekOfMonth: null, fixed: false, ...r });

describe('occurrenceAfter', () => {
  it('INTERVAL: every N days from the anchor', () => {
    const r = rule({ type: 'INTERVAL', interval: 3 });
    expect(occurrenceAfter(r, '2026-01-01', '2026-01-01')).toBe('2026-01-04');
    expect(occurrenceAfter(r, '2026-01-01', '2026-01-03')).toBe('2026-01-04');
    expect(occurrenceAfter(r, '2026-01-01', '2026-01-04')).toBe('2026-01-07');
    expect(occurrenceAfter(r, '2026-01-10', '2026-01-01')).toBe('2026-01-10'); // before the anchor: the anchor
    expect(occurrenceAfter(rule({ type: 'INTERVAL', interval: 1 }), '2024-02-28', '2024-02-28')).toBe('2024-02-29');
  });

  it('WEEKDAY: the next listed weekday, and every Nth week', () => {
    const monThu = rule({ type: 'WEEKDAY', weekdays: [0, 3] });
    expect(occurrenceAfter(monThu, '2026-11-23', '2026-11-23')).toBe('2026-11-26'); // Mon → Thu
    expect(occurrenceAfter(monThu, '2026-11-23', '2026-11-26')).toBe('2026-11-30'); // Thu → next Mon
    expect(occurrenceAfter(rule({ type: 'WEEKDAY', weekdays: [6] }), '2026-12-27', '2026-12-27')).toBe('2027-01-03'); // Sunday across the year end
    const biweekly = rule({ type: 'WEEKDAY', interval: 2, weekdays: [0, 3] });
    expect(occurrenceAfter(biweekly, '2026-11-23', '2026-11-23')).toBe('2026-11-26');
    expect(occurrenceAfter(biweekly, '2026-11-23', '2026-11-26')).toBe('2026-12-07'); // skips the week of Nov 30
    expect(occurrenceAfter(biweekly, '2026-11-25', '2026-11-25')).toBe('2026-11-26'); // anchor on a Wednesday
  });

  it('MONTHLY: same day each month, clamped at month ends without drifting', () => {
    const r = rule({ type: 'MONTHLY' });
    expect(occurrenceAfter(r, '2026-01-31', '2026-01-31')).toBe('2026-02-28');
    expect(occurrenceAfter(r, '2026-01-31', '2026-02-28')).toBe('2026-03-31'); // back to the 31st, not the 28th
    expect(occurrenceAfter(r, '2026-01-31', '2026-03-31')).toBe('2026-04-30');
    expect(occurrenceAfter(r, '2024-01-31', '2024-01-31')).toBe('2024-02-29');
    expect(occurrenceAfter(r, '2026-01-30', '2026-01-30')).toBe('2026-02-28');
    expect(occurrenceAfter(r, '2026-12-15', '2026-12-15')).toBe('2027-01-15');
    const quarterly = rule({ type: 'MONTHLY', interval: 3 });
    expect(occurrenceAfter(quarterly, '2026-11-30', '2026-11-30')).toBe('2027-02-28');
    expect(occurrenceAfter(quarterly, '2026-11-30', '2027-02-28')).toBe('2027-05-30');
    expect(occurrenceAfter(quarterly, '2026-11-30', '2027-04-01')).toBe('2027-05-30');
  });

  it('YEARLY: same date each year, Feb 29 clamped in common years', () => {
    const r = rule({ type: 'YEARLY' });
    expect(occurrenceAfter(r, '2024-02-29', '2024-02-29')).toBe('2025-02-28');
    expect(occurrenceAfter(r, '2024-02-29', '2025-02-28')).toBe('2026-02-28');
    expect(occurrenceAfter(r, '2024-02-29', '2027-03-01')).toBe('2028-02-29');
    expect(occurrenceAfter(r, '2026-12-31', '2026-12-31')).toBe('2027-12-31');
    expect(occurrenceAfter(rule({ type: 'YEARLY', interval: 2 }), '2026-06-15', '2026-06-15')).toBe('2028-06-15');
  });

  it('NTH_WEEKDAY: nth or last weekday of every Nth month', () => {
    const lastFriday = rule({ type: 'NTH_WEEKDAY', weekdays: [4], weekOfMonth: -1 });
    expect(occurrenceAfter(lastFriday, '2026-11-01', '2026-11-01')).toBe('2026-11-27');
    expect(occurrenceAfter(lastFriday, '2026-11-01', '2026-11-27')).toBe('2026-12-25');
    expect(occurrenceAfter(lastFriday, '2026-11-28', '2026-11-28')).toBe('2026-12-25');
    const firstMonday = rule({ type: 'NTH_WEEKDAY', weekdays: [0], weekOfMonth: 1 });
    expect(occurrenceAfter(firstMonday, '2026-11-03', '2026-11-03')).toBe('2026-12-07');
    const secondTuesdayBimonthly = rule({ type: 'NTH_WEEKDAY', interval: 2, weekdays: [1], weekOfMonth: 2 });
    expect(occurrenceAfter(secondTuesdayBimonthly, '2026-01-01', '2026-01-01')).toBe('2026-01-13');
    expect(occurrenceAfter(secondTuesdayBimonthly, '2026-01-01', '2026-01-13')).toBe('2026-03-10');
  });

  /** An independent membership test, to check occurrenceAfter against brute force. */
  function onSchedule(r: RecurrenceRule, anchor: LocalDate, d: LocalDate): boolean {
    if (d < anchor) return false;
    const a = parseDate(anchor);
    const p = parseDate(d);
    const months = monthIndex(p) - monthIndex(a);
    switch (r.type) {
      case 'INTERVAL':
        return (dayNumber(d) - dayNumber(anchor)) % r.interval === 0;
      case 'WEEKDAY':
        return r.weekdays.includes(weekday(d)) && (weekIndex(d) - weekIndex(anchor)) % r.interval === 0;
      case 'MONTHLY':
        return months % r.interval === 0 && p.day === Math.min(a.day, daysInMonth(p.year, p.month));
      case 'YEARLY':
        return months % (12 * r.interval) === 0 && p.day === Math.min(a.day, daysInMonth(p.year, p.month));
      case 'NTH_WEEKDAY': {
        if (months % r.interval !== 0 || weekday(d) !== r.weekdays[0]) return false;
        const n = r.weekOfMonth!;
        return n === -1 ? p.day + 7 > daysInMonth(p.year, p.month) : Math.ceil(p.day / 7) === n;
      }
    }
  }

  it('agrees with a brute-force search for every kind over many anchors (leap years included)', () => {
    const rules = [
      rule({ type: 'INTERVAL', interval: 1 }),
      rule({ type: 'INTERVAL', interval: 10 }),
      rule({ type: 'WEEKDAY', weekdays: [2] }),
      rule({ type: 'WEEKDAY', interval: 3, weekdays: [0, 4, 6] }),
      rule({ type: 'MONTHLY' }),
      rule({ type: 'MONTHLY', interval: 5 }),
      rule({ type: 'YEARLY' }),
      rule({ type: 'NTH_WEEKDAY', weekdays: [4], weekOfMonth: -1 }),
      rule({ type: 'NTH_WEEKDAY', interval: 2, weekdays: [6], weekOfMonth: 3 }),
    ];
    let checked = 0;
    for (const r of rules) {
      for (let a = 0; a < 1_500; a += 37) {
        const anchor = addDays('2023-12-20', a);
        for (const offset of [-3, 0, 1, 13, 29, 58, 200, 400]) {
          const after = addDays(anchor, offset);
          let expected = addDays(after, 1);
          while (!onSchedule(r, anchor, expected)) expected = addDays(expected, 1);
          expect(occurrenceAfter(r, anchor, after), `${JSON.stringify(r)} anchor ${anchor} after ${after}`).toBe(expected);
          checked++;
        }
      }
    }
    expect(checked).toBe(9 * 41 * 8);
  });
});

describe('advanceOnCompletion', () => {
  it('rolling INTERVAL counts from the completion day (reference)', () => {
    const r = rule({ type: 'INTERVAL', interval: 7 });
    expect(advanceOnCompletion(r, { anchor: '2026-11-01', nextDueDate: '2026-11-01' }, '2026-11-05')).toEqual({ anchor: '2026-11-05', nextDueDate: '2026-11-12' });
  });

  it('fixed INTERVAL keeps the schedule; early completion moves one step, late completion skips missed dates', () => {
    const r = rule({ type: 'INTERVAL', interval: 7, fixed: true });
    expect(advanceOnCompletion(r, { anchor: '2026-11-01', nextDueDate: '2026-11-08' }, '2026-11-06').nextDueDate).toBe('2026-11-15');
    expect(advanceOnCompletion(r, { anchor: '2026-11-01', nextDueDate: '2026-11-08' }, '2026-11-08').nextDueDate).toBe('2026-11-15');
    expect(advanceOnCompletion(r, { anchor: '2026-11-01', nextDueDate: '2026-11-08' }, '2026-11-23')).toEqual({ anchor: '2026-11-01', nextDueDate: '2026-11-29' });
  });

  it('rolling MONTHLY is today + 1 month clamped; fixed MONTHLY keeps the 31st', () => {
    expect(advanceOnCompletion(rule({ type: 'MONTHLY' }), { anchor: '2026-01-31', nextDueDate: '2026-01-31' }, '2026-01-31').nextDueDate).toBe('2026-02-28');
    expect(advanceOnCompletion(rule({ type: 'MONTHLY' }), { anchor: '2026-01-31', nextDueDate: '2026-02-28' }, '2026-02-28').nextDueDate).toBe('2026-03-28');
    const fixed = rule({ type: 'MONTHLY', fixed: true });
    const s1 = advanceOnCompletion(fixed, { anchor: '2026-01-31', nextDueDate: '2026-01-31' }, '2026-01-31');
    expect(s1.nextDueDate).toBe('2026-02-28');
    expect(advanceOnCompletion(fixed, s1, '2026-02-28').nextDueDate).toBe('2026-03-31');
  });

  it('rolling WEEKDAY is the next listed weekday after today', () => {
    const r = rule({ type: 'WEEKDAY', weekdays: [0, 2, 4] });
    expect(advanceOnCompletion(r, { anchor: '2026-11-02', nextDueDate: '2026-11-02' }, '2026-11-27').nextDueDate).toBe('2026-11-30'); // Fri → Mon
    expect(advanceOnCompletion(r, { anchor: '2026-11-02', nextDueDate: '2026-11-02' }, '2026-11-24').nextDueDate).toBe('2026-11-25'); // Tue → Wed
  });

  it('fixed YEARLY from a leap day', () => {
    const r = rule({ type: 'YEARLY', fixed: true });
    const s = advanceOnCompletion(r, { anchor: '2024-02-29', nextDueDate: '2024-02-29' }, '2024-02-29');
    expect(s.nextDueDate).toBe('2025-02-28');
    expect(upcoming(r, '2024-02-29', '2024-02-29', 6)).toEqual(['2024-02-29', '2025-02-28', '2026-02-28', '2027-02-28', '2028-02-29', '2029-02-28']);
  });

  it('fixed NTH_WEEKDAY completed early stays on the schedule', () => {
    const r = rule({ type: 'NTH_WEEKDAY', weekdays: [4], weekOfMonth: -1, fixed: true });
    expect(advanceOnCompletion(r, { anchor: '2026-11-27', nextDueDate: '2026-11-27' }, '2026-11-20').nextDueDate).toBe('2026-12-25');
  });

  it('uses the local date of the completion instant: the same instant is a different day in another zone', () => {
    const r = rule({ type: 'INTERVAL', interval: 1 });
    const instant = new Date('2026-11-22T23:30:00Z');
    const state = { anchor: '2026-11-20', nextDueDate: '2026-11-22' };
    expect(advanceOnCompletion(r, state, localDate(instant, 'UTC')).nextDueDate).toBe('2026-11-23');
    expect(advanceOnCompletion(r, state, localDate(instant, 'Asia/Tokyo')).nextDueDate).toBe('2026-11-24');
    expect(advanceOnCompletion(r, state, localDate(new Date('2026-11-23T04:00:00Z'), 'America/New_York')).nextDueDate).toBe('2026-11-23');
  });
});

describe('completion days across DST changes', () => {
  const daily = rule({ type: 'INTERVAL', interval: 1 });
  const next = (instant: string, zone: string) => advanceOnCompletion(daily, { anchor: '2026-01-01', nextDueDate: '2026-01-01' }, localDate(new Date(instant), zone)).nextDueDate;

  it('spring forward: 00:30 local on the 23-hour day counts for that day', () => {
    expect(next('2026-03-28T23:30:00Z', 'Europe/Berlin')).toBe('2026-03-30'); // 00:30 CET on 2026-03-29
    expect(next('2026-03-29T21:59:00Z', 'Europe/Berlin')).toBe('2026-03-30'); // 23:59 CEST, same day
    expect(next('2026-03-29T22:00:00Z', 'Europe/Berlin')).toBe('2026-03-31'); // 00:00 CEST next day
  });

  it('fall back: both 01:30s of the repeated hour are the same day', () => {
    expect(next('2026-11-01T05:30:00Z', 'America/New_York')).toBe('2026-11-02'); // 01:30 EDT
    expect(next('2026-11-01T06:30:00Z', 'America/New_York')).toBe('2026-11-02'); // 01:30 EST
    expect(next('2026-11-02T04:59:00Z', 'America/New_York')).toBe('2026-11-02'); // 23:59 EST on Nov 1
  });

  it('a day whose midnight does not exist (America/Santiago) still starts and ends correctly', () => {
    expect(next('2026-09-06T03:59:00Z', 'America/Santiago')).toBe('2026-09-06'); // 23:59 on Sep 5 (-04)
    expect(next('2026-09-06T04:00:00Z', 'America/Santiago')).toBe('2026-09-07'); // 01:00 on Sep 6 (-03)
  });
});

describe('validateRule', () => {
  it('accepts each well-formed kind', () => {
    for (const r of [
      rule({ type: 'INTERVAL', interval: 365 }),
      rule({ type: 'WEEKDAY', weekdays: [0, 6], interval: 2 }),
      rule({ type: 'MONTHLY', interval: 24 }),
      rule({ type: 'YEARLY' }),
      rule({ type: 'NTH_WEEKDAY', weekdays: [4], weekOfMonth: -1 }),
    ])
      expect(validateRule(r)).toEqual([]);
  });

  it('names the field that is wrong', () => {
    const fields = (r: RecurrenceRule) => validateRule(r).map((i) => i.field);
    expect(fields(rule({ type: 'INTERVAL', interval: 0 }))).toEqual(['recurrenceInterval']);
    expect(fields(rule({ type: 'INTERVAL', interval: 366 }))).toEqual(['recurrenceInterval']);
    expect(fields(rule({ type: 'WEEKDAY', weekdays: [] }))).toEqual(['recurrenceWeekdays']);
    expect(fields(rule({ type: 'WEEKDAY', weekdays: [1, 1] }))).toEqual(['recurrenceWeekdays']);
    expect(fields(rule({ type: 'WEEKDAY', weekdays: [7] }))).toEqual(['recurrenceWeekdays']);
    expect(fields(rule({ type: 'MONTHLY', weekdays: [1] }))).toEqual(['recurrenceWeekdays']);
    expect(fields(rule({ type: 'NTH_WEEKDAY', weekdays: [1, 2], weekOfMonth: 1 }))).toEqual(['recurrenceWeekdays']);
    expect(fields(rule({ type: 'NTH_WEEKDAY', weekdays: [1], weekOfMonth: 5 }))).toEqual(['recurrenceWeekOfMonth']);
    expect(fields(rule({ type: 'MONTHLY', weekOfMonth: 2 }))).toEqual(['recurrenceWeekOfMonth']);
  });
});
