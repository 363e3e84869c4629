import { z } from 'zod';
import { defineEvent } from './bus.ts';

/** Calendar date in the user's timezone. */
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

/** The spec's task event payload, exactly: what outbound task-event webhooks POST. */
export const taskEventPayload = z
  .object({
    event: taskEventName,
    timestamp: z.string(),
    task: z
      .object({
        id: z.uuid(),
        title: z.string(),
        type: taskType,
        priority: taskPriority,
        topicId: z.uuid().nullable(),
        /**
         * The task's parent when it is a subtask (null otherwise). Optional for readers: events
         * written before subtasks existed lack it.
         */
        parentId: z.uuid().nullable().optional(),
        dueDate: isoDate.nullable(),
        /** set only on task.completed */
        completedAt: z.string().nullable(),
        createdAt: z.string(),
      })
      .strict(),
  })
  .strict();
export type TaskEventPayload = z.infer<typeof taskEventPayload>;

/**
 * The task's reminders still to come, as instants (the tasks service computes them in the user's
 * zone), for the scheduler's due-queue. `version` orders the schedules of one task (the event's
 * time): a schedule older than the queue's rows never removes them.
 */
export const reminderSchedule = z.object({
  version: z.string(),
  due: z.array(z.object({ key: z.string().min(1).max(100), at: z.string() })).max(10),
});
export type ReminderSchedule = z.infer<typeof reminderSchedule>;

/**
 * On the bus the payload travels with its owner, so consumers know whose endpoints to use, and,
 * when the task has (or just lost) reminders, with their schedule. Webhooks POST only `payload`.
 */
export const taskEventMessage = z.object({ userId: z.uuid(), payload: taskEventPayload, reminders: reminderSchedule.optional() });
export type TaskEventMessage = z.infer<typeof taskEventMessage>;

/** One durable event per kind: `events.task.created` … Consumers subscribe to `events.task.>`. */
export const taskEvents = {
  'task.created': defineEvent('events.task.created', taskEventMessage),
  'task.updated': defineEvent('events.task.updated', taskEventMessage),
  'task.completed': defineEvent('events.task.completed', taskEventMessage),
  'task.deleted': defineEvent('events.task.deleted', taskEventMessage),
} as const;
export const TASK_EVENTS_FILTER = 'events.task.>';
