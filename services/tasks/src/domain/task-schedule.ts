import { startSchedule, validateRule, type RecurrenceRule, type RecurrenceType, type RuleIssue } from '@tasksvc/proto/calendar/recurrence.ts';

/**
 * How a task's recurrence columns follow from what a create or update asks for (pure).
 * Only RECURRING tasks have a rule; a rule on any other type is a mistake the caller hears about.
 */
export interface RecurrenceInput {
  type: 'ONE_TIME' | 'RECURRING' | 'DAILY_ELIGIBLE';
  recurrenceType: RecurrenceType | null;
  recurrenceInterval: number | null;
  recurrenceWeekdays: number[] | null;
  recurrenceWeekOfMonth: number | null;
  recurrenceFixed: boolean;
  dueDate: string | null;
}

/** The task columns a schedule sets (the task row's names). */
export interface RecurrenceColumns {
  recurrenceType: RecurrenceType | null;
  recurrenceInterval: number | null;
  recurrenceWeekdays: number[] | null;
  recurrenceWeekOfMonth: number | null;
  recurrenceFixed: boolean;
  recurrenceAnchor: string | null;
  nextDueDate: string | null;
}

export type ScheduleResult = { ok: true; columns: RecurrenceColumns } | { ok: false; issues: RuleIssue[] };

const NONE: RecurrenceColumns = {
  recurrenceType: null,
  recurrenceInterval: null,
  recurrenceWeekdays: null,
  recurrenceWeekOfMonth: null,
  recurrenceFixed: false,
  recurrenceAnchor: null,
  nextDueDate: null,
};

/**
 * @param start the date a (re)started schedule counts from: the due date if given, else the
 * current next due date (an edit that keeps the schedule's place), else today.
 */
export function resolveRecurrence(input: RecurrenceInput, start: string): ScheduleResult {
  if (input.type !== 'RECURRING') {
    const stray = (
      [
        ['recurrenceType', input.recurrenceType !== null],
        ['recurrenceInterval', input.recurrenceInterval !== null],
        ['recurrenceWeekdays', input.recurrenceWeekdays !== null && input.recurrenceWeekdays.length > 0],
        ['recurrenceWeekOfMonth', input.recurrenceWeekOfMonth !== null],
      ] as const
    ).filter(([, set]) => set);
    if (stray.length > 0) return { ok: false, issues: stray.map(([field]) => ({ field, message: 'applies to RECURRING tasks only' })) };
    return { ok: true, columns: NONE };
  }
  const rule: RecurrenceRule = {
    type: input.recurrenceType ?? 'INTERVAL',
    interval: input.recurrenceInterval ?? 1,
    weekdays: input.recurrenceWeekdays ?? [],
    weekOfMonth: input.recurrenceWeekOfMonth,
    fixed: input.recurrenceFixed,
  };
  const issues = validateRule(rule);
  if (issues.length > 0) return { ok: false, issues };
  const schedule = startSchedule(rule, start);
  return {
    ok: true,
    columns: {
      recurrenceType: rule.type,
      recurrenceInterval: rule.interval,
      recurrenceWeekdays: rule.type === 'WEEKDAY' || rule.type === 'NTH_WEEKDAY' ? [...rule.weekdays].sort((a, b) => a - b) : null,
      recurrenceWeekOfMonth: rule.weekOfMonth,
      recurrenceFixed: rule.fixed,
      recurrenceAnchor: schedule.anchor,
      nextDueDate: schedule.nextDueDate,
    },
  };
}

/** Coins a completion grants: the task's value, doubled once it has been postponed 3 or more times. */
export function completionCoins(coinValue: number, postponeCount: number): number {
  return postponeCount >= 3 ? coinValue * 2 : coinValue;
}

/** Where postponing to `tomorrow` leaves a due date: later only, never earlier, and an undated task stays undated. */
export function postponedDueDate(due: string | null, tomorrow: string): string | null {
  return due === null || due >= tomorrow ? due : tomorrow;
}
