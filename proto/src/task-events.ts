import { z } from 'zod';
import { defineEvent } from './bus.ts';
import { dueDateOf } from './calendar/reminders.ts';
import { defaultsOf } from './contracts.ts';
import { taskEventName, type TaskEventName } from './task-fields.ts';
import { task, type Task } from './tasks.ts';

export * from './task-fields.ts';

/**
 * The fields of a task that its events leave out: the owner (it travels beside the payload) and
 * bookkeeping that is no receiver's business. Every other field of the task — every field added to
 * `task` later included — is in the payload as the API shows it, so a new task field reaches webhooks
 * and consumers with no edit here (with its tolerant default for receivers of an older release).
 */
const NOT_IN_EVENTS = {
  userId: true,
  notes: true,
  recurrenceType: true,
  recurrenceInterval: true,
  recurrenceWeekdays: true,
  recurrenceWeekOfMonth: true,
  recurrenceFixed: true,
  nextDueDate: true,
  snoozedUntil: true,
  pausedAt: true,
  pausedUntil: true,
  postponeCount: true,
  estimatedMinutes: true,
  energyLevel: true,
  sortOrder: true,
  coinValue: true,
  isDailyQuest: true,
  dailyQuestDate: true,
  blocked: true,
  /** a parent's progress moves with its subtasks, which send their own events */
  subtaskCount: true,
  subtasksDone: true,
  updatedAt: true,
  /** the definitions; their instants travel beside the payload as the message's `reminders` schedule */
  reminders: true,
} as const satisfies { [K in keyof Task]?: true };

/** A task event's task, from the task's shape: its fields but those NOT_IN_EVENTS, ids as UUIDs. */
export function eventTaskOf<S extends typeof task>(shape: S) {
  return shape
    .omit(NOT_IN_EVENTS)
    .extend({
      id: z.uuid(),
      topicId: z.uuid().nullable(),
      parentId: z.uuid().nullable(),
    })
    .strict();
}

/**
 * The task in a task event. The spec's fields — id, title, type, priority, topicId, dueDate,
 * completedAt (set only on task.completed), createdAt — and every task field added since.
 */
export const taskEventTask = eventTaskOf(task);
export type TaskEventTask = z.infer<typeof taskEventTask>;

/** The spec's task event payload: what outbound task-event webhooks POST. */
export const taskEventPayload = z
  .object({
    event: taskEventName,
    timestamp: z.string(),
    task: taskEventTask,
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

/**
 * The mark of a task event that carries a reminder schedule (`EventDef.marks`): the scheduler's
 * consumer needs only these, a few of all task events, and skips the others unread.
 */
export const REMINDERS_MARK = 'reminders';
const taskEventMarks = { [REMINDERS_MARK]: (m: TaskEventMessage) => !!m.reminders };

/** One durable event per kind: `events.task.created` … Consumers subscribe to `events.task.>`. */
export const taskEvents = {
  'task.created': defineEvent('events.task.created', taskEventMessage, { marks: taskEventMarks }),
  'task.updated': defineEvent('events.task.updated', taskEventMessage, { marks: taskEventMarks }),
  'task.completed': defineEvent('events.task.completed', taskEventMessage, { marks: taskEventMarks }),
  'task.deleted': defineEvent('events.task.deleted', taskEventMessage, { marks: taskEventMarks }),
} as const;
export const TASK_EVENTS_FILTER = 'events.task.>';

/**
 * What a task event is made from: a task as the API shows it or as its row holds it (instants as
 * `Date`s). The owner and the fields without a default are required; a field left out takes its
 * default (null, an empty list), as for a new task.
 */
export type TaskEventSource = Pick<Task, 'id' | 'userId' | 'title' | 'type' | 'priority'> & { createdAt: string | Date } & {
  [K in keyof Task]?: Task[K] | Date | undefined;
};

const EVENT_TASK_KEYS = Object.keys(taskEventTask.shape) as (keyof TaskEventTask)[];
const EVENT_TASK_DEFAULTS = defaultsOf(taskEventTask);

/**
 * THE mapper from a task to its event message, for the producer (the tasks service) and every
 * fixture, test and bench alike. `dueDate` is the date the task is due on (`dueDateOf`);
 * `completedAt` is set only on task.completed (its time, `opts.completedAt`, or now).
 */
export function taskEvent(
  name: TaskEventName,
  source: TaskEventSource,
  opts: { now?: Date; completedAt?: Date; dueDate?: string | null; /** the task's reminder schedule, when it has (or just lost) reminders */ reminders?: ReminderSchedule | null } = {},
): TaskEventMessage {
  const now = opts.now ?? new Date();
  const t: Record<string, unknown> = {};
  const from = source as Record<string, unknown>;
  for (const key of EVENT_TASK_KEYS) {
    const v = from[key];
    t[key] = v === undefined ? EVENT_TASK_DEFAULTS[key] : v instanceof Date ? v.toISOString() : v;
  }
  t.dueDate = opts.dueDate !== undefined ? opts.dueDate : dueDateOf({ type: source.type, dueDate: (source.dueDate as string | undefined) ?? null, nextDueDate: (source.nextDueDate as string | undefined) ?? null });
  t.completedAt = name === 'task.completed' ? (opts.completedAt ?? now).toISOString() : null;
  return { userId: source.userId, ...(opts.reminders ? { reminders: opts.reminders } : {}), payload: { event: name, timestamp: now.toISOString(), task: t as TaskEventTask } };
}
