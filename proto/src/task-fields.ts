import { z } from 'zod';

/**
 * Field types a task's contracts share (the task itself in tasks.ts, its events in task-events.ts,
 * the game's dates in game.ts): here, so those modules import them without importing each other.
 */

/** `YYYY-MM-DD` and a real calendar date (zod checks month lengths and leap years: no 2023-02-30). */
export const isoDate = z.iso.date('must be a real calendar date YYYY-MM-DD');
export const DATE_MIN = '1970-01-01';
export const DATE_MAX = '2999-12-31';
/**
 * Every date a client sends: a real calendar date in a sane range, so that date arithmetic
 * downstream (week ends, recurrences, day numbers) never leaves the calendar (9999-12-31 did).
 */
export const calendarDate = isoDate.refine((v) => v >= DATE_MIN && v <= DATE_MAX, `must be a date between ${DATE_MIN} and ${DATE_MAX}`);

export const TASK_EVENT_NAMES = ['task.created', 'task.updated', 'task.completed', 'task.deleted'] as const;
export const taskEventName = z.enum(TASK_EVENT_NAMES);
export type TaskEventName = z.infer<typeof taskEventName>;

export const taskType = z.enum(['ONE_TIME', 'RECURRING', 'DAILY_ELIGIBLE']);
export const taskPriority = z.enum(['HIGH', 'NORMAL', 'SOMEDAY']);
