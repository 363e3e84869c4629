import { describe, expect, it } from 'vitest';
import { addDays, daysBetween, isoWeekday, localDate, localParts, monthOf, weekOf } from './dates.ts';
import { EMPTY_STREAK, recordActivity, streakAlive, streakAsOf, streakAtRisk, streakGap, consecutiveDays, type StreakState } from './streak.ts';

const s = (current: number, lastDate: string | null, shieldUsedMonth: string | null = null, max = current): StreakState => ({ current, max, lastDate, shieldUsedMonth });
const act = (st: StreakState, today: string, shield = true) => recordActivity(st, today, { shield });

describe('dates in a timezone', () => {
  it('gives the calendar date of one instant on both sides of the date line', () => {
    const instant = new Date('2026-03-01T10:30:00Z');
    // UTC+14: already the evening of the same day; UTC−11: still the small hours of the same day.
    expect(localParts(instant, 'Pacific/Kiritimati')).toMatchObject({ date: '2026-03-02', hour: 0, minute: 30 });
    expect(localParts(instant, 'Pacific/Pago_Pago')).toMatchObject({ date: '2026-02-28', hour: 23, minute: 30 });
    expect(localDate(instant, 'UTC')).toBe('2026-03-01');
  });
  it('does calendar arithmetic across month and leap-year ends', () => {
    expect(addDays('2028-02-28', 1)).toBe('2028-02-29');
    expect(addDays('2027-02-28', 1)).toBe('2027-03-01');
    expect(addDays('2026-12-31', 1)).toBe('2027-01-01');
    expect(daysBetween('2026-01-30', '2026-03-01')).toBe(30);
    expect(monthOf('2026-04-01')).toBe('2026-04');
  });
  it('finds the Monday–Sunday week', () => {
    expect(isoWeekday('2026-11-22')).toBe(7);
    expect(weekOf('2026-11-22')).toEqual({ start: '2026-11-16', end: '2026-11-22' });
    expect(weekOf('2026-11-16')).toEqual({ start: '2026-11-16', end: '2026-11-22' });
    expect(weekOf('2026-01-01')).toEqual({ start: '2025-12-29', end: '2026-01-04' });
  });
});

describe('streak', () => {
  it('starts at 1 from nothing', () => {
    expect(act(EMPTY_STREAK, '2026-05-10')).toEqual({ state: s(1, '2026-05-10'), change: 'started' });
  });
  it('does not change on a second activity the same day', () => {
    const st = s(4, '2026-05-10');
    expect(act(st, '2026-05-10')).toEqual({ state: st, change: 'same-day' });
  });
  it('extends by one when the last activity was yesterday, and tracks the maximum', () => {
    expect(act(s(4, '2026-05-09', null, 4), '2026-05-10').state).toEqual(s(5, '2026-05-10', null, 5));
    expect(act(s(2, '2026-05-09', null, 9), '2026-05-10').state).toEqual(s(3, '2026-05-10', null, 9));
  });
  it('extends across a month end and a year end', () => {
    expect(act(s(3, '2026-01-31'), '2026-02-01').change).toBe('extended');
    expect(act(s(3, '2026-12-31'), '2027-01-01').change).toBe('extended');
  });
  it('uses the shield for exactly one missed day, keeping (not incrementing) the streak', () => {
    const r = act(s(6, '2026-05-08', null, 6), '2026-05-10');
    expect(r).toEqual({ state: s(6, '2026-05-10', '2026-05', 6), change: 'shielded' });
    // and the next day extends as usual
    expect(act(r.state, '2026-05-11').state.current).toBe(7);
  });
  it('allows the shield once per calendar month', () => {
    expect(act(s(6, '2026-05-20', '2026-05'), '2026-05-22')).toMatchObject({ change: 'reset', state: { current: 1 } });
    // a shield used in April does not stop one in May
    expect(act(s(6, '2026-05-20', '2026-04'), '2026-05-22').change).toBe('shielded');
  });
  it('counts the shield month by the day of the activity across a month end', () => {
    // missed 2026-03-31, back on 2026-04-01: a March shield does not block April's
    const r = act(s(10, '2026-03-30', '2026-03'), '2026-04-01');
    expect(r).toEqual({ state: s(10, '2026-04-01', '2026-04'), change: 'shielded' });
    // missed 2026-02-28 (not a leap year): back on 2026-03-01
    expect(act(s(2, '2026-02-27', '2026-02'), '2026-03-01').change).toBe('shielded');
  });
  it('resets after two or more missed days, even with the shield available', () => {
    expect(act(s(6, '2026-05-07'), '2026-05-10')).toEqual({ state: s(1, '2026-05-10', null, 6), change: 'reset' });
  });
  it('has no shield for the quest streak', () => {
    expect(act(s(6, '2026-05-08'), '2026-05-10', false)).toMatchObject({ change: 'reset', state: { current: 1, shieldUsedMonth: null } });
  });
  it('ignores an activity dated before the last one', () => {
    const st = s(3, '2026-05-10');
    expect(act(st, '2026-05-09').state).toBe(st);
  });
  it('decides "today" in the user timezone: the same instant is a different day in UTC+14 and UTC−11', () => {
    // Last activity on local 2026-06-01 for both users. The instant 2026-06-02T11:00Z is
    // local 2026-06-03 01:00 in Kiritimati (one day missed: shield) and 2026-06-02 00:00 in Pago Pago (extend).
    const instant = new Date('2026-06-02T11:00:00Z');
    const kiritimati = localDate(instant, 'Pacific/Kiritimati');
    const pagoPago = localDate(instant, 'Pacific/Pago_Pago');
    expect([kiritimati, pagoPago]).toEqual(['2026-06-03', '2026-06-02']);
    expect(act(s(5, '2026-06-01'), kiritimati).change).toBe('shielded');
    expect(act(s(5, '2026-06-01'), pagoPago).change).toBe('extended');
  });
  it('rolls the shield month by the local month at a month end in UTC+14 and UTC−11', () => {
    // 2026-06-30T10:30Z: Kiritimati is already July 1st, Pago Pago still June 29th.
    const instant = new Date('2026-06-30T10:30:00Z');
    const k = localDate(instant, 'Pacific/Kiritimati');
    const p = localDate(instant, 'Pacific/Pago_Pago');
    expect(act(s(8, addDays(k, -2), '2026-06'), k)).toMatchObject({ change: 'shielded', state: { shieldUsedMonth: '2026-07' } });
    expect(act(s(8, addDays(p, -2), '2026-06'), p)).toMatchObject({ change: 'reset' });
  });
});

describe('streak reminders', () => {
  it('is at risk when alive and nothing counted today', () => {
    expect(streakAtRisk(s(3, '2026-05-09'), '2026-05-10')).toBe(true);
    expect(streakAtRisk(s(3, '2026-05-10'), '2026-05-10')).toBe(false);
    expect(streakAtRisk(s(0, '2026-05-09'), '2026-05-10')).toBe(false);
  });
  it('counts a streak the shield can still save as alive, a dead one not', () => {
    expect(streakAlive(s(3, '2026-05-08'), '2026-05-10', { shield: true })).toBe(true);
    expect(streakAlive(s(3, '2026-05-08', '2026-05'), '2026-05-10', { shield: true })).toBe(false);
    expect(streakAlive(s(3, '2026-05-07'), '2026-05-10', { shield: true })).toBe(false);
    expect(streakAtRisk(s(3, '2026-05-07'), '2026-05-10')).toBe(false);
  });
});

describe('streak lapse and vacation', () => {
  const s: StreakState = { current: 10, max: 10, lastDate: '2026-03-02', shieldUsedMonth: null };
  it('shows a lapsed streak as 0 everywhere (one rule)', () => {
    expect(streakAsOf(s, '2026-03-03')).toBe(10);
    expect(streakAsOf(s, '2026-03-04')).toBe(10); // the shield could still keep it
    expect(streakAsOf({ ...s, shieldUsedMonth: '2026-03' }, '2026-03-04')).toBe(0);
    expect(streakAsOf(s, '2026-03-07')).toBe(0); // five idle days
  });
  it('does not count vacation days as missed', () => {
    const v = { ...s, vacation: { start: '2026-03-03', end: '2026-03-09' } };
    expect(streakGap(v, '2026-03-10')).toBe(1);
    expect(streakAsOf(v, '2026-03-10')).toBe(10);
    expect(recordActivity(v, '2026-03-10', { shield: true })).toMatchObject({ change: 'extended', state: { current: 11 } });
    // a vacation that began days after the last activity excuses only its own days
    const late = { ...s, vacation: { start: '2026-03-05', end: '2026-03-09' } };
    expect(streakGap(late, '2026-03-10')).toBe(3);
    expect(recordActivity(late, '2026-03-10', { shield: true }).change).toBe('reset');
    // while on vacation the streak stays alive
    expect(streakAsOf(v, '2026-03-06')).toBe(10);
  });
});

describe('consecutive days (energy check-in streak)', () => {
  it('counts back from today, or from yesterday while today has none yet', () => {
    expect(consecutiveDays([], '2026-03-10')).toBe(0);
    expect(consecutiveDays(['2026-03-10', '2026-03-09', '2026-03-08', '2026-03-06'], '2026-03-10')).toBe(3);
    expect(consecutiveDays(['2026-03-09', '2026-03-08'], '2026-03-10')).toBe(2);
    expect(consecutiveDays(['2026-03-08'], '2026-03-10')).toBe(0);
    // across a month end
    expect(consecutiveDays(['2026-03-01', '2026-02-28', '2026-02-27'], '2026-03-01')).toBe(3);
  });
});
