import { addDays, daysBetween, monthOf, type IsoDate } from './dates.ts';

export interface StreakState {
  current: number;
  max: number;
  /** local date of the last counted activity */
  lastDate: IsoDate | null;
  /** `YYYY-MM` in which the shield was last used; null when never */
  shieldUsedMonth: string | null;
  /** a vacation (first and last day, inclusive): its days never break the streak */
  vacation?: Vacation | null;
}

export interface Vacation {
  start: IsoDate;
  end: IsoDate;
}

export type StreakChange = 'same-day' | 'extended' | 'shielded' | 'reset' | 'started';

export const EMPTY_STREAK: StreakState = { current: 0, max: 0, lastDate: null, shieldUsedMonth: null };

/**
 * Count an activity on local date `today` (reference §8). With `shield`, exactly one missed day
 * keeps the streak (without incrementing it) once per calendar month of `today`.
 */
export function recordActivity(s: StreakState, today: IsoDate, opts: { shield: boolean }): { state: StreakState; change: StreakChange } {
  if (s.lastDate === today) return { state: s, change: 'same-day' };
  const gap = s.lastDate === null ? null : streakGap(s, today);
  // An activity dated before the last one (clock or timezone change) changes nothing.
  if (gap !== null && gap < 0) return { state: s, change: 'same-day' };
  let current: number;
  let change: StreakChange;
  let shieldUsedMonth = s.shieldUsedMonth;
  if (gap === 1 && s.current > 0) {
    current = s.current + 1;
    change = 'extended';
  } else if (gap === 2 && s.current > 0 && opts.shield && s.shieldUsedMonth !== monthOf(today)) {
    current = s.current;
    shieldUsedMonth = monthOf(today);
    change = 'shielded';
  } else {
    current = 1;
    change = s.current > 0 ? 'reset' : 'started';
  }
  return { state: { ...s, current, max: Math.max(s.max, current), lastDate: today, shieldUsedMonth }, change };
}

/**
 * The streak as of `today` without new activity: what the UI shows and what reminders consider.
 * It is alive when today's activity could still extend or shield it.
 */
export function streakAlive(s: StreakState, today: IsoDate, opts: { shield: boolean }): boolean {
  if (s.current <= 0 || s.lastDate === null) return false;
  const gap = streakGap(s, today);
  if (gap <= 1) return true;
  return gap === 2 && opts.shield && s.shieldUsedMonth !== monthOf(today);
}

/** A streak reminder is worth sending: the streak is alive and nothing has counted today yet. */
export function streakAtRisk(s: StreakState, today: IsoDate): boolean {
  return s.lastDate !== today && streakAlive(s, today, { shield: true });
}


/**
 * Days from the last activity to `today`, not counting vacation days in between: activity after a
 * vacation continues the streak as if the vacation had not happened.
 */
export function streakGap(s: Pick<StreakState, 'lastDate' | 'vacation'>, today: IsoDate): number {
  const gap = daysBetween(s.lastDate!, today);
  const v = s.vacation;
  if (!v || gap <= 1) return gap;
  // Vacation days strictly between the last activity and today.
  const from = v.start > s.lastDate! ? v.start : addDays(s.lastDate!, 1);
  const to = v.end < today ? v.end : addDays(today, -1);
  return from > to ? gap : gap - (daysBetween(from, to) + 1);
}

/** The streak as every screen and message shows it on `today`: 0 once it has lapsed (one rule everywhere). */
export function streakAsOf(s: StreakState, today: IsoDate): number {
  return streakAlive(s, today, { shield: true }) ? s.current : 0;
}

/**
 * Consecutive days ending today, or yesterday while today has no entry yet (the run is still
 * alive), from distinct dates sorted newest first. Used for the energy check-in streak.
 */
export function consecutiveDays(datesNewestFirst: readonly IsoDate[], today: IsoDate): number {
  let expect = datesNewestFirst[0] === today ? today : addDays(today, -1);
  let n = 0;
  for (const d of datesNewestFirst) {
    if (d !== expect) break;
    n++;
    expect = addDays(expect, -1);
  }
  return n;
}
