import type { StreakState } from './domain/streak.ts';

/** The profile columns behind both streaks and the vacation (profiles aliased `p`), read the same way everywhere. */
export const STREAK_COLUMNS = `p.streak_current, p.streak_max, p.streak_last_date::text, p.streak_shield_used_month,
  p.quest_streak_current, p.quest_streak_max, p.quest_streak_last_date::text, p.vacation_start_date::text, p.vacation_end_date::text`;

export interface StreakColumns {
  streak_current: number;
  streak_max: number;
  streak_last_date: string | null;
  streak_shield_used_month: string | null;
  quest_streak_current: number;
  quest_streak_max: number;
  quest_streak_last_date: string | null;
  vacation_start_date: string | null;
  vacation_end_date: string | null;
}

/** A vacation without an end runs until it is ended; one without a start (set before starts were kept) began long ago. */
const OPEN_END = '9999-12-31';
const LONG_AGO = '0001-01-01';

export function streaksOf(r: StreakColumns): { streak: StreakState; questStreak: StreakState } {
  const vacation = r.vacation_start_date || r.vacation_end_date ? { start: r.vacation_start_date ?? LONG_AGO, end: r.vacation_end_date ?? OPEN_END } : null;
  return {
    streak: { current: r.streak_current, max: r.streak_max, lastDate: r.streak_last_date, shieldUsedMonth: r.streak_shield_used_month, vacation },
    questStreak: { current: r.quest_streak_current, max: r.quest_streak_max, lastDate: r.quest_streak_last_date, shieldUsedMonth: null, vacation },
  };
}

/** SQL: the user (profiles `p`) is on vacation on the date expression `d`. */
export const onVacation = (d: string) =>
  `((p.vacation_start_date IS NOT NULL OR p.vacation_end_date IS NOT NULL) AND COALESCE(p.vacation_start_date, '-infinity'::date) <= ${d} AND COALESCE(p.vacation_end_date, 'infinity'::date) >= ${d})`;
