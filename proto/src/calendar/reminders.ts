/**
 * Reminders at a time: when a task's reminders fire, as instants, from its due date, its time of
 * day and the user's zone. Pure (no I/O), shared by the tasks service (which schedules and checks
 * them) and the UI (which shows them). The rules are written down in docs/notifications.md.
 */
import { parseDate, utcOffsetMinutes, type LocalDate } from './dates.ts';

/** A reminder as the API carries it: an instant, or minutes before the task is due. */
export type Reminder = { at: string } | { beforeDueMinutes: number };

/** A due date without a time of day is due at this local time for its relative reminders. */
export const DEFAULT_DUE_TIME = '09:00';
export const MAX_REMINDERS = 5;
/** 28 days: the furthest ahead of its due time a relative reminder may fire. */
export const MAX_BEFORE_DUE_MINUTES = 40_320;

/** What of a task decides its reminders. */
export interface ReminderTask {
  type: string;
  dueDate: LocalDate | null;
  /** RECURRING: the occurrence due next; relative reminders follow it */
  nextDueDate: LocalDate | null;
  /** `HH:MM`, local */
  dueTime: string | null;
  reminders: readonly Reminder[] | null;
}

/** One reminder's instant; `key` names the reminder within its task (stable while the reminder is unchanged). */
export interface ReminderInstant {
  key: string;
  at: Date;
}

/** A reminder's stable name within its task: what it says, so two equal reminders are one. */
export function reminderKey(r: Reminder): string {
  return 'at' in r ? `at:${new Date(r.at).toISOString()}` : `before:${r.beforeDueMinutes}`;
}

/**
 * The instant a local wall-clock time has in a zone. DST: a time inside the spring-forward gap
 * (02:30 where clocks jump from 02:00 to 03:00) is taken as the same time on the clock before the
 * jump, i.e. moved later by the gap (03:30); a time that happens twice in the autumn is its first
 * occurrence. Offsets are found half a day either side, so no zone rule tables are needed.
 */
export function localInstant(date: LocalDate, time: string, timeZone: string): Date {
  const { year, month, day } = parseDate(date);
  const [hour, minute] = time.split(':').map(Number) as [number, number];
  const wall = Date.UTC(year, month - 1, day, hour, minute);
  const before = utcOffsetMinutes(new Date(wall - 12 * 3_600_000), timeZone);
  const after = utcOffsetMinutes(new Date(wall + 12 * 3_600_000), timeZone);
  const fits = (offset: number) => utcOffsetMinutes(new Date(wall - offset * 60_000), timeZone) === offset;
  const candidates = [before, after].filter(fits).map((o) => wall - o * 60_000);
  // none fits: the gap (the clock before the jump says where the wall time lands after it)
  return new Date(candidates.length > 0 ? Math.min(...candidates) : wall - before * 60_000);
}

const clocks = new Map<string, Intl.DateTimeFormat>();
/** The local wall-clock time `HH:MM` of an instant in a zone. */
export function localTime(instant: Date, timeZone: string): string {
  let f = clocks.get(timeZone);
  if (!f) clocks.set(timeZone, (f = new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' })));
  return f.format(instant);
}

/** The date a task is due on: the next occurrence for RECURRING tasks. */
export function dueDateOf(t: Pick<ReminderTask, 'type' | 'dueDate' | 'nextDueDate'>): LocalDate | null {
  return t.type === 'RECURRING' ? t.nextDueDate : t.dueDate;
}

/** When the task is due, as an instant: its date at its time of day, or at DEFAULT_DUE_TIME without one. */
export function dueInstant(t: ReminderTask, timeZone: string): Date | null {
  const date = dueDateOf(t);
  return date ? localInstant(date, t.dueTime ?? DEFAULT_DUE_TIME, timeZone) : null;
}

/**
 * Every reminder of the task with its instant (relative ones without a due date have none and are
 * left out). A RECURRING task's relative reminders follow its next occurrence; absolute ones fire once.
 */
export function reminderInstants(t: ReminderTask, timeZone: string): ReminderInstant[] {
  const due = dueInstant(t, timeZone);
  const out: ReminderInstant[] = [];
  for (const r of t.reminders ?? []) {
    if ('at' in r) out.push({ key: reminderKey(r), at: new Date(r.at) });
    else if (due) out.push({ key: reminderKey(r), at: new Date(due.getTime() - r.beforeDueMinutes * 60_000) });
  }
  return out;
}

/** The reminders still to come after `now`: what the scheduler is asked to fire. */
export function upcomingReminders(t: ReminderTask, timeZone: string, now: Date): ReminderInstant[] {
  return reminderInstants(t, timeZone).filter((r) => r.at.getTime() > now.getTime());
}

/**
 * The reminders after "Snooze 1 h" from a notification at `now`: absolute reminders already past
 * are dropped (they have fired), and one at `now + minutes` is added. Null when the task already has
 * MAX_REMINDERS reminders still to come.
 */
export function snoozedReminders(current: readonly Reminder[] | null, now: Date, minutes: number): Reminder[] | null {
  const kept = (current ?? []).filter((r) => !('at' in r) || new Date(r.at).getTime() > now.getTime());
  if (kept.length >= MAX_REMINDERS) return null;
  return [...kept, { at: new Date(now.getTime() + minutes * 60_000).toISOString() }];
}
