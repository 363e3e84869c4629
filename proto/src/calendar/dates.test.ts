import { describe, expect, it } from 'vitest';
import {
  addDays,
  addMonths,
  daysInMonth,
  fromDayNumber,
  dayNumber,
  isLeapYear,
  isValidDate,
  isValidTimeZone,
  localDate,
  nthWeekdayOfMonth,
  startOfLocalDay,
  utcOffsetMinutes,
  weekday,
  weekIndex,
} from './dates.ts';

describe('calendar dates', () => {
  it('knows leap years, including the century rules', () => {
    expect([2024, 2000, 2400].map(isLeapYear)).toEqual([true, true, true]);
    expect([2023, 1900, 2100, 2026].map(isLeapYear)).toEqual([false, false, false, false]);
    expect(daysInMonth(2024, 2)).toBe(29);
    expect(daysInMonth(2100, 2)).toBe(28);
    expect([1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12].map((m) => daysInMonth(2026, m))).toEqual([31, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]);
  });

  it('accepts only real calendar dates', () => {
    expect(isValidDate('2024-02-29')).toBe(true);
    for (const bad of ['2026-02-29', '2026-04-31', '2026-13-01', '2026-00-10', '2026-1-01', '20260101', '2026-01-01T00:00', '0000-01-01']) expect(isValidDate(bad), bad).toBe(false);
  });

  it('adds days across month, year and leap-day boundaries', () => {
    expect(addDays('2026-01-31', 1)).toBe('2026-02-01');
    expect(addDays('2024-02-28', 1)).toBe('2024-02-29');
    expect(addDays('2025-02-28', 1)).toBe('2025-03-01');
    expect(addDays('2026-12-31', 1)).toBe('2027-01-01');
    expect(addDays('2026-03-01', -1)).toBe('2026-02-28');
    expect(addDays('2026-01-01', 365)).toBe('2027-01-01');
    expect(fromDayNumber(dayNumber('1969-12-31'))).toBe('1969-12-31');
  });

  it('numbers weekdays from Monday = 0 and groups Monday-based weeks', () => {
    expect(weekday('2026-11-23')).toBe(0); // a Monday
    expect(weekday('2026-11-22')).toBe(6); // a Sunday
    expect(weekday('1970-01-01')).toBe(3); // a Thursday
    expect(weekIndex('2026-11-23')).toBe(weekIndex('2026-11-29'));
    expect(weekIndex('2026-11-30')).toBe(weekIndex('2026-11-23') + 1);
  });

  it('adds months with month-end clamping', () => {
    expect(addMonths('2026-01-31', 1)).toBe('2026-02-28');
    expect(addMonths('2024-01-31', 1)).toBe('2024-02-29');
    expect(addMonths('2026-03-31', 1)).toBe('2026-04-30');
    expect(addMonths('2026-12-15', 1)).toBe('2027-01-15');
    expect(addMonths('2026-02-28', 1, 31)).toBe('2026-03-31');
    expect(addMonths('2024-02-29', 12)).toBe('2025-02-28');
    expect(addMonths('2024-02-29', 48)).toBe('2028-02-29');
    expect(addMonths('2026-01-15', -2)).toBe('2025-11-15');
  });

  it('finds the nth and the last weekday of a month', () => {
    expect(nthWeekdayOfMonth(2026, 11, 4, -1)).toBe('2026-11-27'); // last Friday
    expect(nthWeekdayOfMonth(2026, 1, 4, -1)).toBe('2026-01-30');
    expect(nthWeekdayOfMonth(2026, 11, 0, 1)).toBe('2026-11-02'); // first Monday
    expect(nthWeekdayOfMonth(2026, 11, 6, 1)).toBe('2026-11-01'); // first Sunday is the 1st
    expect(nthWeekdayOfMonth(2026, 2, 1, 4)).toBe('2026-02-24'); // fourth Tuesday
    expect(nthWeekdayOfMonth(2024, 2, 3, -1)).toBe('2024-02-29'); // last Thursday on a leap day
    expect(nthWeekdayOfMonth(2026, 8, 0, -1)).toBe('2026-08-31');
  });
});

describe('timezones', () => {
  it('validates IANA names', () => {
    expect(isValidTimeZone('Europe/Berlin')).toBe(true);
    expect(isValidTimeZone('UTC')).toBe(true);
    expect(isValidTimeZone('Mars/Olympus')).toBe(false);
    expect(isValidTimeZone('')).toBe(false);
  });

  it('puts an instant on the local calendar date, not the UTC one', () => {
    const t = new Date('2026-11-22T23:30:00Z');
    expect(localDate(t, 'UTC')).toBe('2026-11-22');
    expect(localDate(t, 'Europe/Berlin')).toBe('2026-11-23');
    expect(localDate(new Date('2026-11-22T04:30:00Z'), 'America/Los_Angeles')).toBe('2026-11-21');
    expect(localDate(new Date('2026-12-31T10:30:00Z'), 'Pacific/Kiritimati')).toBe('2027-01-01'); // UTC+14
    expect(localDate(new Date('2026-01-01T10:30:00Z'), 'Pacific/Pago_Pago')).toBe('2025-12-31'); // UTC-11
    expect(localDate(new Date('2026-06-01T18:29:00Z'), 'Asia/Kolkata')).toBe('2026-06-01'); // +05:30
    expect(localDate(new Date('2026-06-01T18:30:00Z'), 'Asia/Kolkata')).toBe('2026-06-02');
  });

  it('answers from the per-minute memory only within the same minute (a 45-minute zone crosses midnight at :15)', () => {
    // Kathmandu is UTC+05:45: local midnight is 18:15 UTC
    const seq: [string, string][] = [
      ['2026-06-01T18:14:00.000Z', '2026-06-01'],
      ['2026-06-01T18:14:59.999Z', '2026-06-01'],
      ['2026-06-01T18:15:00.000Z', '2026-06-02'],
      ['2026-06-01T18:14:30.000Z', '2026-06-01'], // back in time: a clock set back, or an older instant
      ['2026-06-01T18:15:00.001Z', '2026-06-02'],
    ];
    for (const [at, date] of seq) expect(localDate(new Date(at), 'Asia/Kathmandu'), at).toBe(date);
  });

  it('follows DST changes', () => {
    // Berlin springs forward on 2026-03-29 at 01:00 UTC and falls back on 2026-10-25 at 01:00 UTC.
    expect(utcOffsetMinutes(new Date('2026-03-29T00:59:00Z'), 'Europe/Berlin')).toBe(60);
    expect(utcOffsetMinutes(new Date('2026-03-29T01:00:00Z'), 'Europe/Berlin')).toBe(120);
    expect(utcOffsetMinutes(new Date('2026-10-25T01:00:00Z'), 'Europe/Berlin')).toBe(60);
    // 22:30 UTC is the next day in Berlin in summer (+2) and in winter (+1) too, but 23:00 UTC
    // on the fall-back day is still 00:00 next day only with +1.
    expect(localDate(new Date('2026-10-24T22:30:00Z'), 'Europe/Berlin')).toBe('2026-10-25');
    expect(localDate(new Date('2026-10-25T22:30:00Z'), 'Europe/Berlin')).toBe('2026-10-25');
    expect(localDate(new Date('2026-10-25T23:00:00Z'), 'Europe/Berlin')).toBe('2026-10-26');
    // Lord Howe moves by 30 minutes.
    expect(utcOffsetMinutes(new Date('2026-01-15T00:00:00Z'), 'Australia/Lord_Howe')).toBe(660);
    expect(utcOffsetMinutes(new Date('2026-07-15T00:00:00Z'), 'Australia/Lord_Howe')).toBe(630);
  });

  it('finds the first instant of a local day, also when DST skips midnight', () => {
    expect(startOfLocalDay('2026-11-22', 'UTC').toISOString()).toBe('2026-11-22T00:00:00.000Z');
    expect(startOfLocalDay('2026-07-01', 'Europe/Berlin').toISOString()).toBe('2026-06-30T22:00:00.000Z');
    expect(startOfLocalDay('2026-03-29', 'Europe/Berlin').toISOString()).toBe('2026-03-28T23:00:00.000Z'); // the day itself is 23 h long
    expect(startOfLocalDay('2026-03-30', 'Europe/Berlin').toISOString()).toBe('2026-03-29T22:00:00.000Z');
    expect(startOfLocalDay('2026-03-08', 'America/New_York').toISOString()).toBe('2026-03-08T05:00:00.000Z');
    expect(startOfLocalDay('2026-03-09', 'America/New_York').toISOString()).toBe('2026-03-09T04:00:00.000Z');
    // Chile springs forward at local midnight: 2026-09-06 begins at 01:00 local (-03) = 04:00 UTC.
    expect(startOfLocalDay('2026-09-06', 'America/Santiago').toISOString()).toBe('2026-09-06T04:00:00.000Z');
    expect(localDate(startOfLocalDay('2026-09-06', 'America/Santiago'), 'America/Santiago')).toBe('2026-09-06');
  });
});
