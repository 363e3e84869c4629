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

export interface RecurrenceColumns {
  recurrence_type: RecurrenceType | null;
  recurrence_interval: number | null;
  recurrence_weekdays: number[] | null;
  recurrence_week_of_month: number | null;
  recurrence_fixed: boolean;
  recurrence_anchor: string | null;
  next_due_date: string | null;
}

export type ScheduleResult = { ok: true; columns: RecurrenceColumns } | { ok: false; issues: RuleIssue[] };

const NONE: RecurrenceColumns = {
  recurrence_type: null,
  recurrence_interval: null,
  recurrence_weekdays: null,
  recurrence_week_of_month: null,
  recurrence_fixed: false,
  recurrence_anchor: null,
  next_due_date: null,
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
      recurrence_type: rule.type,
      recurrence_interval: rule.interval,
      recurrence_weekdays: rule.type === 'WEEKDAY' || rule.type === 'NTH_WEEKDAY' ? [...rule.weekdays].sort((a, b) => a - b) : null,
      recurrence_week_of_month: rule.weekOfMonth,
      recurrence_fixed: rule.fixed,
      recurrence_anchor: schedule.anchor,
      next_due_date: schedule.nextDueDate,
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
