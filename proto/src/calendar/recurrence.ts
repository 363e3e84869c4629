import {
  addDays,
  clampedDate,
  dayNumber,
  fromMonthIndex,
  isValidDate,
  maxDate,
  monthIndex,
  nthWeekdayOfMonth,
  parseDate,
  weekIndex,
  weekday,
  type LocalDate,
} from './dates.ts';

/**
 * Recurrence of RECURRING tasks, as pure functions of calendar dates.
 *
 * A rule plus an anchor date defines a schedule (the set of dates a task is due on):
 * - INTERVAL: anchor + k·N days
 * - WEEKDAY: the listed weekdays of every Nth week (weeks counted Monday-based from the anchor's week)
 * - MONTHLY: the anchor's day of month every N months, clamped to the month's end (31 → Feb 28/29)
 * - YEARLY: the anchor's month and day every N years, clamped (Feb 29 → Feb 28 in common years)
 * - NTH_WEEKDAY: the nth (1-4) or last (-1) listed weekday of every Nth month ("last Friday")
 * Only dates on or after the anchor belong to the schedule.
 *
 * Completing a task moves `nextDueDate` along its schedule:
 * - fixed (schedule-based): the anchor stays; the next date is the first schedule date after both the
 *   old due date and today, so a late completion skips the occurrences that were missed instead of
 *   leaving the task overdue.
 * - rolling (completion-based): the schedule re-anchors on the completion day, so the next date is
 *   counted from today (INTERVAL: today + N; MONTHLY: today + N months; WEEKDAY: the next listed day).
 */

export const RECURRENCE_TYPES = ['INTERVAL', 'WEEKDAY', 'MONTHLY', 'YEARLY', 'NTH_WEEKDAY'] as const;
export type RecurrenceType = (typeof RECURRENCE_TYPES)[number];

export interface RecurrenceRule {
  type: RecurrenceType;
  /** every N days / weeks / months / years */
  interval: number;
  /** 0 = Monday … 6 = Sunday; WEEKDAY: one or more; NTH_WEEKDAY: exactly one */
  weekdays: number[];
  /** NTH_WEEKDAY: 1-4, or -1 for the last one in the month */
  weekOfMonth: number | null;
  /** schedule-based (true) or completion-based (false) */
  fixed: boolean;
}

export const MAX_INTERVAL: Record<RecurrenceType, number> = { INTERVAL: 365, WEEKDAY: 52, MONTHLY: 24, YEARLY: 10, NTH_WEEKDAY: 24 };

export interface RuleIssue {
  field: 'recurrenceType' | 'recurrenceInterval' | 'recurrenceWeekdays' | 'recurrenceWeekOfMonth';
  message: string;
}

/** What is wrong with a rule (empty when it is usable). */
export function validateRule(rule: RecurrenceRule): RuleIssue[] {
  const issues: RuleIssue[] = [];
  if (!Number.isInteger(rule.interval) || rule.interval < 1 || rule.interval > MAX_INTERVAL[rule.type]) {
    issues.push({ field: 'recurrenceInterval', message: `must be an integer from 1 to ${MAX_INTERVAL[rule.type]} for ${rule.type}` });
  }
  const days = new Set(rule.weekdays);
  if (rule.weekdays.some((d) => !Number.isInteger(d) || d < 0 || d > 6) || days.size !== rule.weekdays.length) {
    issues.push({ field: 'recurrenceWeekdays', message: 'must be distinct weekdays 0 (Monday) to 6 (Sunday)' });
  } else if (rule.type === 'WEEKDAY' && days.size === 0) {
    issues.push({ field: 'recurrenceWeekdays', message: 'WEEKDAY recurrence needs at least one weekday' });
  } else if (rule.type === 'NTH_WEEKDAY' && days.size !== 1) {
    issues.push({ field: 'recurrenceWeekdays', message: 'NTH_WEEKDAY recurrence needs exactly one weekday' });
  } else if (rule.type !== 'WEEKDAY' && rule.type !== 'NTH_WEEKDAY' && days.size > 0) {
    issues.push({ field: 'recurrenceWeekdays', message: `weekdays do not apply to ${rule.type} recurrence` });
  }
  if (rule.type === 'NTH_WEEKDAY') {
    if (rule.weekOfMonth === null || ![1, 2, 3, 4, -1].includes(rule.weekOfMonth)) issues.push({ field: 'recurrenceWeekOfMonth', message: 'must be 1, 2, 3, 4 or -1 (last)' });
  } else if (rule.weekOfMonth !== null) {
    issues.push({ field: 'recurrenceWeekOfMonth', message: 'applies to NTH_WEEKDAY recurrence only' });
  }
  return issues;
}

/** The schedule's date in the kth period after the anchor's (months-based kinds only). */
function monthlyOccurrence(rule: RecurrenceRule, anchor: LocalDate, k: number): LocalDate {
  const a = parseDate(anchor);
  const step = rule.type === 'YEARLY' ? 12 * rule.interval : rule.interval;
  const m = fromMonthIndex(monthIndex(a) + k * step);
  if (rule.type === 'NTH_WEEKDAY') return nthWeekdayOfMonth(m.year, m.month, rule.weekdays[0]!, rule.weekOfMonth!);
  return clampedDate(m.year, m.month, a.day);
}

/** The first date of the schedule (rule, anchor) that is strictly after `after`. */
export function occurrenceAfter(rule: RecurrenceRule, anchor: LocalDate, after: LocalDate): LocalDate {
  if (!isValidDate(anchor) || !isValidDate(after)) throw new RangeError(`bad dates ${anchor} / ${after}`);
  const from = maxDate(anchor, addDays(after, 1)); // the first date that could qualify
  switch (rule.type) {
    case 'INTERVAL': {
      const n = rule.interval;
      const k = Math.ceil((dayNumber(from) - dayNumber(anchor)) / n);
      return addDays(anchor, k * n);
    }
    case 'WEEKDAY': {
      const wanted = new Set(rule.weekdays);
      const anchorWeek = weekIndex(anchor);
      // A whole cycle of N weeks plus one week always contains a listed day of an active week.
      for (let i = 0, d = from; i < 7 * rule.interval + 7; i++, d = addDays(d, 1)) {
        if (wanted.has(weekday(d)) && (weekIndex(d) - anchorWeek) % rule.interval === 0) return d;
      }
      throw new Error('unreachable: weekday schedule without a date');
    }
    case 'MONTHLY':
    case 'YEARLY':
    case 'NTH_WEEKDAY': {
      const step = rule.type === 'YEARLY' ? 12 * rule.interval : rule.interval;
      const behind = monthIndex(parseDate(from)) - monthIndex(parseDate(anchor));
      // Start one period early: the candidate in `from`'s own period may already lie before it.
      for (let k = Math.max(0, Math.floor(behind / step) - 1); ; k++) {
        const d = monthlyOccurrence(rule, anchor, k);
        if (d >= from) return d;
      }
    }
  }
}

/**
 * Where a new (or re-scheduled) RECURRING task starts: the first schedule date on or after `start`,
 * with the schedule anchored on `start`. "Every Monday" created on a Wednesday is due on Monday.
 */
export function startSchedule(rule: RecurrenceRule, start: LocalDate): ScheduleState {
  return { anchor: start, nextDueDate: occurrenceAfter(rule, start, addDays(start, -1)) };
}

export interface ScheduleState {
  /** the date the schedule is anchored on */
  anchor: LocalDate;
  /** the date the task is currently due on */
  nextDueDate: LocalDate;
}

/** Where a RECURRING task's schedule stands after it is completed on `today` (user's local date). */
export function advanceOnCompletion(rule: RecurrenceRule, state: ScheduleState, today: LocalDate): ScheduleState {
  if (rule.fixed) {
    return { anchor: state.anchor, nextDueDate: occurrenceAfter(rule, state.anchor, maxDate(state.nextDueDate, today)) };
  }
  return { anchor: today, nextDueDate: occurrenceAfter(rule, today, today) };
}

/** The first `count` dates of a schedule starting with `first` (the task's current due date). */
export function upcoming(rule: RecurrenceRule, anchor: LocalDate, first: LocalDate, count: number): LocalDate[] {
  const out = [first];
  while (out.length < count) out.push(occurrenceAfter(rule, anchor, out[out.length - 1]!));
  return out;
}
