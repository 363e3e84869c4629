import type { StreakColumns } from '../db/profiles.ts';
import type { StreakState } from './domain/streak.ts';

/** A vacation without an end runs until it is ended; one without a start (set before starts were kept) began long ago. */
const OPEN_END = '9999-12-31';
const LONG_AGO = '0001-01-01';

/** Both streaks of a profile, read the same way everywhere. */
export function streaksOf(r: StreakColumns): { streak: StreakState; questStreak: StreakState } {
  const vacation = r.vacationStartDate || r.vacationEndDate ? { start: r.vacationStartDate ?? LONG_AGO, end: r.vacationEndDate ?? OPEN_END } : null;
  return {
    streak: { current: r.streakCurrent, max: r.streakMax, lastDate: r.streakLastDate, shieldUsedMonth: r.streakShieldUsedMonth, vacation },
    questStreak: { current: r.questStreakCurrent, max: r.questStreakMax, lastDate: r.questStreakLastDate, shieldUsedMonth: null, vacation },
  };
}
