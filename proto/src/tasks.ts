import { z } from 'zod';
import { defineRoute, rawResponse, storedId, type AnyRoute } from './http.ts';
import { RECURRENCE_TYPES } from './calendar/recurrence.ts';
import { MAX_BEFORE_DUE_MINUTES, MAX_REMINDERS } from './calendar/reminders.ts';
import { calendarDate, isoDate, taskPriority, taskType } from './task-fields.ts';

/**
 * HTTP contract of the tasks service: tasks, topics, profile settings and the iCal feed. Shapes
 * follow the reference (`{ task }`, `{ tasks }`, `{ topic }`, `{ success: true }`); field names are
 * camelCase; calendar dates are `YYYY-MM-DD` in the user's timezone; instants are ISO 8601.
 */

export const energyLevel = z.enum(['HIGH', 'MEDIUM', 'LOW']);
/** INTERVAL, WEEKDAY, MONTHLY, YEARLY as in the reference; NTH_WEEKDAY = "nth/last weekday of the month". */
export const recurrenceType = z.enum(RECURRENCE_TYPES);

const uuidParam = z.object({ id: z.uuid() }).strict();
const title = z.string().trim().min(1).max(255);
const notes = z.string().max(5000);
/**
 * The reference lets a client send its current IANA zone with day-sensitive writes; when given it
 * decides "today" for that request (the stored profile zone is used otherwise, and is not changed).
 */
const clientTimezone = z.string().min(1).max(64).optional();
const timezoneOnly = z.object({ timezone: clientTimezone }).strict().optional();
const weekdays = z.array(z.number().int().min(0).max(6)).max(7);

/** A time of day, `HH:MM` (24 h), local to the user's zone. */
export const dueTime = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be a time of day HH:MM (00:00 to 23:59)');
/**
 * A reminder: at an instant (ISO 8601 with an offset or Z), or a number of minutes before the task
 * is due (its due date at its dueTime, or at 09:00 local without one; docs/notifications.md).
 */
export const reminder = z.union([
  z.object({ at: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 instant such as 2026-05-01T09:30:00Z' }) }).strict(),
  z.object({ beforeDueMinutes: z.number().int().min(0).max(MAX_BEFORE_DUE_MINUTES) }).strict(),
]);
export const reminderList = z
  .array(reminder)
  .max(MAX_REMINDERS, `at most ${MAX_REMINDERS} reminders`)
  .refine((list) => new Set(list.map((r) => ('at' in r ? `at:${Date.parse(r.at)}` : `before:${r.beforeDueMinutes}`))).size === list.length, 'the same reminder is listed twice');

export const task = z.object({
  id: storedId,
  userId: storedId,
  topicId: storedId.nullable(),
  /** the task this one is a subtask of (one level deep: a parent is never itself a subtask) */
  parentId: storedId.nullable(),
  /** how many subtasks it has, and how many of them are done (progress "2/5") */
  subtaskCount: z.number().int().default(0),
  subtasksDone: z.number().int().default(0),
  title: z.string(),
  notes: z.string().nullable(),
  type: taskType,
  priority: taskPriority,
  /** RECURRING only */
  recurrenceType: recurrenceType.nullable(),
  /** every N days (INTERVAL), weeks (WEEKDAY), months (MONTHLY, NTH_WEEKDAY) or years (YEARLY) */
  recurrenceInterval: z.number().int().nullable(),
  /** 0 = Monday … 6 = Sunday */
  recurrenceWeekdays: z.array(z.number().int()).nullable(),
  /** NTH_WEEKDAY: 1-4 or -1 (last) */
  recurrenceWeekOfMonth: z.number().int().nullable(),
  /** true: schedule-based; false: counted from the completion day */
  recurrenceFixed: z.boolean(),
  dueDate: isoDate.nullable(),
  /** the time of day it is due (`HH:MM`, the user's zone); only with a due date */
  dueTime: z.string().nullable(),
  /** at most 5; relative ones count back from the due date at dueTime (09:00 without one) */
  reminders: z.array(reminder),
  /** RECURRING: the date the task is due next */
  nextDueDate: isoDate.nullable(),
  /** ONE_TIME / DAILY_ELIGIBLE: when it was completed; RECURRING tasks are never "completed" */
  completedAt: z.string().nullable(),
  snoozedUntil: isoDate.nullable(),
  /** paused tasks are left out of the daily quest and reminders until resumed (or until `pausedUntil`) */
  pausedAt: z.string().nullable(),
  /** the first day the task counts again; null while paused without an end */
  pausedUntil: isoDate.nullable(),
  postponeCount: z.number().int(),
  estimatedMinutes: z.number().int().nullable(),
  energyLevel: energyLevel.nullable(),
  sortOrder: z.number().int(),
  coinValue: z.number().int(),
  isDailyQuest: z.boolean(),
  dailyQuestDate: isoDate.nullable(),
  /** not the first open task of a sequential topic */
  blocked: z.boolean(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type Task = z.infer<typeof task>;

const recurrenceFields = {
  recurrenceType: recurrenceType.nullable(),
  recurrenceInterval: z.number().int().min(1).max(365).nullable(),
  recurrenceWeekdays: weekdays.nullable(),
  recurrenceWeekOfMonth: z.union([z.literal(1), z.literal(2), z.literal(3), z.literal(4), z.literal(-1)]).nullable(),
  recurrenceFixed: z.boolean(),
};

/** Fields that create and update accept alike (create adds defaults, update adds snooze and order). */
const optionalTaskFields = {
  notes: notes.nullable().optional(),
  topicId: z.uuid().nullable().optional(),
  /** make it a subtask of this task (the user's, not itself a subtask); update: null moves it out */
  parentId: z.uuid().nullable().optional(),
  dueDate: calendarDate.nullable().optional(),
  dueTime: dueTime.nullable().optional(),
  reminders: reminderList.optional(),
  recurrenceType: recurrenceFields.recurrenceType.optional(),
  recurrenceInterval: recurrenceFields.recurrenceInterval.optional(),
  recurrenceWeekdays: recurrenceFields.recurrenceWeekdays.optional(),
  recurrenceWeekOfMonth: recurrenceFields.recurrenceWeekOfMonth.optional(),
  recurrenceFixed: recurrenceFields.recurrenceFixed.optional(),
  estimatedMinutes: z.number().int().min(1).max(1440).nullable().optional(),
  energyLevel: energyLevel.nullable().optional(),
};

export const createTaskBody = z
  .object({
    title,
    ...optionalTaskFields,
    type: taskType.default('ONE_TIME'),
    priority: taskPriority.default('NORMAL'),
    coinValue: z.number().int().min(1).max(10).default(1),
    timezone: clientTimezone,
  })
  .strict();
export type CreateTaskBody = z.infer<typeof createTaskBody>;

export const updateTaskBody = z
  .object({
    title: title.optional(),
    ...optionalTaskFields,
    type: taskType.optional(),
    priority: taskPriority.optional(),
    coinValue: z.number().int().min(1).max(10).optional(),
    snoozedUntil: calendarDate.nullable().optional(),
    sortOrder: z.number().int().min(0).max(1_000_000).optional(),
  })
  .strict();
export type UpdateTaskBody = z.infer<typeof updateTaskBody>;

/** Query strings carry "true"/"false"; the parsed call is validated again on the bus, so booleans pass too. */
const boolQuery = z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]);

export const listTasksQuery = z
  .object({
    /** a topic id, or `none` for tasks without a topic */
    topicId: z.union([z.uuid(), z.literal('none')]).optional(),
    /** a task's subtasks, or `none` for tasks that are not subtasks */
    parentId: z.union([z.uuid(), z.literal('none')]).optional(),
    type: taskType.optional(),
    priority: taskPriority.optional(),
    completed: boolQuery.optional(),
    /** include tasks snoozed beyond today (default true) */
    snoozed: boolQuery.optional(),
    /** due (or next due) on or before this date */
    dueBefore: calendarDate.optional(),
    dueAfter: calendarDate.optional(),
    limit: z.coerce.number().int().min(1).max(500).default(200),
    offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
  })
  .strict();
export type ListTasksQuery = z.infer<typeof listTasksQuery>;

export const taskReply = z.object({ task });
export const taskListReply = z.object({ tasks: z.array(task), total: z.number().int(), limit: z.number().int(), offset: z.number().int() });
export const successReply = z.object({ success: z.literal(true) });

/** Most subtasks one task may have. */
export const MAX_SUBTASKS = 50;

export const completeTaskBody = z
  .object({
    timezone: clientTimezone,
    /** a task with open subtasks is completed only with this set: its open subtasks are completed with it (else 409 SUBTASKS_OPEN) */
    completeSubtasks: z.boolean().optional(),
  })
  .strict()
  .optional();

export const completeTaskReply = z.object({
  task,
  /** coins granted by this completion (doubled when the task was postponed 3 or more times; a subtask earns none) */
  coinsEarned: z.number().int(),
  completionId: z.uuid(),
  /** the user's coin balance afterwards */
  coins: z.number().int(),
  /** a subtask's parent after this completion; null for a task that is no subtask */
  parent: z
    .object({
      task,
      /** every subtask of the parent is done: offer to complete it (unless `completed`) */
      allSubtasksDone: z.boolean(),
      /** completed along with its last subtask (the user's autoCompleteParent setting) */
      completed: z.boolean(),
      /** the coins that completion granted */
      coinsEarned: z.number().int(),
    })
    .nullable(),
});
/** `coinsRemoved`: everything the undo took back, also from completions undone with it (a parent its last subtask completed, subtasks completed with their parent). */
export const undoCompleteReply = z.object({ task, coinsRemoved: z.number().int(), coins: z.number().int() });

export const createSubtaskBody = createTaskBody.omit({ parentId: true });
export const breakdownBody = z
  .object({
    /** the subtasks to add, in order (the reference's field) */
    subtaskTitles: z.array(title).min(2, 'at least 2 subtasks').max(10, 'at most 10 subtasks at once'),
  })
  .strict();
export const breakdownReply = z.object({ task, subtasks: z.array(task) });
export const subtasksReply = z.object({ tasks: z.array(task) });

export const promoteBody = z
  .object({
    /** the topic is sequential: only its first open task is workable, in the subtasks' order */
    sequential: z.boolean().optional(),
  })
  .strict()
  .optional();
/** How long a promote-to-topic can be undone (DELETE /api/tasks/<id>/promote-to-topic). */
export const PROMOTE_UNDO_MINUTES = 10;

/** completing a task's last open subtask completes the task too (default false: the reply offers it) */
const autoCompleteParent = z.boolean();
// The reply's default lets an older sender's reply read; the body has none, so a PUT that leaves the key out keeps it.
export const taskSettings = z.object({ autoCompleteParent: autoCompleteParent.default(false) });
export const taskSettingsBody = z.object({ autoCompleteParent }).partial().strict();

export const snoozeBody = z.object({ snoozedUntil: calendarDate, timezone: clientTimezone }).strict();

const taskIds = z.array(z.uuid()).min(1).max(200);
export const bulkBody = z.discriminatedUnion('action', [
  z.object({ action: z.literal('complete'), taskIds, timezone: clientTimezone }).strict(),
  z.object({ action: z.literal('delete'), taskIds }).strict(),
  z.object({ action: z.literal('changeTopic'), taskIds, topicId: z.uuid().nullable() }).strict(),
  z.object({ action: z.literal('setPriority'), taskIds, priority: taskPriority }).strict(),
  z.object({ action: z.literal('snooze'), taskIds, snoozedUntil: calendarDate.nullable() }).strict(),
]);
export type BulkBody = z.infer<typeof bulkBody>;
export const bulkReply = z.object({ success: z.literal(true), affected: z.number().int() });

export const topic = z.object({
  id: z.uuid(),
  userId: z.uuid(),
  title: z.string(),
  description: z.string().nullable(),
  color: z.string().nullable(),
  icon: z.string().nullable(),
  priority: taskPriority,
  archived: z.boolean(),
  /** only the first open task is actionable */
  sequential: z.boolean(),
  defaultEnergyLevel: energyLevel.nullable(),
  sortOrder: z.number().int(),
  taskCount: z.number().int(),
  openTaskCount: z.number().int(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type Topic = z.infer<typeof topic>;

/** Longest topic title (a task's may be longer: promote-to-topic shortens it). */
export const MAX_TOPIC_TITLE = 100;
const topicTitle = z.string().trim().min(1).max(MAX_TOPIC_TITLE);
const colour = z.string().regex(/^#[0-9A-Fa-f]{6}$/, 'must be a hex colour like #ff8800');
const icon = z.string().min(1).max(64);

export const createTopicBody = z
  .object({
    title: topicTitle,
    description: z.string().max(5000).nullable().optional(),
    color: colour.nullable().optional(),
    icon: icon.nullable().optional(),
    priority: taskPriority.default('NORMAL'),
    sequential: z.boolean().default(false),
    defaultEnergyLevel: energyLevel.nullable().optional(),
  })
  .strict();
export type CreateTopicBody = z.infer<typeof createTopicBody>;

export const updateTopicBody = z
  .object({
    title: topicTitle.optional(),
    description: z.string().max(5000).nullable().optional(),
    color: colour.nullable().optional(),
    icon: icon.nullable().optional(),
    priority: taskPriority.optional(),
    archived: z.boolean().optional(),
    sequential: z.boolean().optional(),
    defaultEnergyLevel: energyLevel.nullable().optional(),
  })
  .strict();
export type UpdateTopicBody = z.infer<typeof updateTopicBody>;

export const listTopicsQuery = z.object({ archived: z.enum(['true', 'false', 'all']).default('all') }).strict();
export const topicReply = z.object({ topic });
export const topicWithTasksReply = z.object({ topic, tasks: z.array(task) });
export const topicListReply = z.object({ topics: z.array(topic) });
export const reorderTopicsBody = z.object({ topicIds: z.array(z.uuid()).min(1).max(500) }).strict();
export const reorderTasksBody = z.object({ taskIds: z.array(z.uuid()).min(1).max(500) }).strict();

export const timezoneReply = z.object({ timezone: z.string() });
export const timezoneBody = z.object({ timezone: z.string().min(1).max(64) }).strict();

export const profile = z.object({
  userId: z.uuid(),
  timezone: z.string(),
  coins: z.number().int(),
  totalTasksCreated: z.number().int(),
  vacationEndDate: isoDate.nullable(),
  postponeLimit: z.number().int(),
  notificationEnabled: z.boolean(),
  notificationTime: z.string(),
  dueTodayReminderEnabled: z.boolean(),
  dueTodayReminderTime: z.string(),
  recurringDueReminderEnabled: z.boolean(),
  recurringDueReminderTime: z.string(),
  overdueReminderEnabled: z.boolean(),
  overdueReminderTime: z.string(),
  morningBriefingEnabled: z.boolean(),
  morningBriefingTime: z.string(),
  weeklyReviewTime: z.string(),
  streakReminderEnabled: z.boolean().default(false),
  weeklyReviewEnabled: z.boolean().default(false),
  autoCompleteParent: z.boolean().default(false),
  createdAt: z.string(),
});
export type Profile = z.infer<typeof profile>;

export const calendarFeedStatus = z.object({ active: z.boolean(), createdAt: z.string().nullable() });
export const calendarFeedCreated = z.object({ url: z.string(), createdAt: z.string() });
/** `ts_cal_` + base64url of 32 random bytes, then `.ics` */
export const CALENDAR_TOKEN_PREFIX = 'ts_cal_';
const feedFile = z.string().regex(/^ts_cal_[A-Za-z0-9_-]{43}\.ics$/, 'unknown calendar feed');

const TAG_TASKS = 'Tasks';
const TAG_TOPICS = 'Topics';
const TAG_SETTINGS = 'Settings';
const TAG_CALENDAR = 'Calendar';

export const tasksApi = {
  list: defineRoute({ method: 'GET', path: '/api/tasks', auth: 'user', subject: 'tasks.http.list', query: listTasksQuery, response: taskListReply, summary: 'List tasks (filters, bounded pagination)', tag: TAG_TASKS }),
  create: defineRoute({ method: 'POST', path: '/api/tasks', auth: 'user', subject: 'tasks.http.create', body: createTaskBody, response: taskReply, summary: 'Create a task', tag: TAG_TASKS }),
  bulk: defineRoute({ method: 'PATCH', path: '/api/tasks/bulk', auth: 'user', subject: 'tasks.http.bulk', body: bulkBody, response: bulkReply, summary: 'Bulk action: complete (no coins, recurring skipped), delete, changeTopic, setPriority, snooze', tag: TAG_TASKS }),
  bulkPost: defineRoute({ method: 'POST', path: '/api/tasks/bulk', auth: 'user', subject: 'tasks.http.bulk.post', body: bulkBody, response: bulkReply, status: 200, summary: 'Bulk action (same as PATCH)', tag: TAG_TASKS }),
  get: defineRoute({ method: 'GET', path: '/api/tasks/:id', auth: 'user', subject: 'tasks.http.get', params: uuidParam, response: taskReply, summary: 'Get a task', tag: TAG_TASKS }),
  update: defineRoute({ method: 'PATCH', path: '/api/tasks/:id', auth: 'user', subject: 'tasks.http.update', params: uuidParam, body: updateTaskBody, response: taskReply, summary: 'Update a task', tag: TAG_TASKS }),
  remove: defineRoute({ method: 'DELETE', path: '/api/tasks/:id', auth: 'user', subject: 'tasks.http.delete', params: uuidParam, response: successReply, summary: 'Delete a task', tag: TAG_TASKS }),
  complete: defineRoute({ method: 'POST', path: '/api/tasks/:id/complete', auth: 'user', subject: 'tasks.http.complete', params: uuidParam, body: completeTaskBody, response: completeTaskReply, status: 200, summary: 'Complete a task (RECURRING: advance to the next due date; open subtasks: 409 SUBTASKS_OPEN unless completeSubtasks)', tag: TAG_TASKS }),
  undoComplete: defineRoute({ method: 'DELETE', path: '/api/tasks/:id/complete', auth: 'user', subject: 'tasks.http.uncomplete', params: uuidParam, response: undoCompleteReply, summary: 'Undo the latest completion, taking back exactly the coins it granted', tag: TAG_TASKS }),
  listSubtasks: defineRoute({ method: 'GET', path: '/api/tasks/:id/subtasks', auth: 'user', subject: 'tasks.http.subtasks.list', params: uuidParam, response: subtasksReply, summary: "A task's subtasks, in their order", tag: TAG_TASKS }),
  createSubtask: defineRoute({ method: 'POST', path: '/api/tasks/:id/subtasks', auth: 'user', subject: 'tasks.http.subtasks.create', params: uuidParam, body: createSubtaskBody, response: taskReply, summary: 'Add a subtask (as POST /api/tasks with parentId)', tag: TAG_TASKS }),
  reorderSubtasks: defineRoute({ method: 'PUT', path: '/api/tasks/:id/subtasks/reorder', auth: 'user', subject: 'tasks.http.subtasks.reorder', params: uuidParam, body: reorderTasksBody, response: successReply, summary: "Order a task's subtasks (array index becomes the order; every subtask, once)", tag: TAG_TASKS }),
  breakdown: defineRoute({ method: 'POST', path: '/api/tasks/:id/breakdown', auth: 'user', subject: 'tasks.http.breakdown', params: uuidParam, body: breakdownBody, response: breakdownReply, summary: 'Split a task into 2–10 subtasks (added after any it has)', tag: TAG_TASKS }),
  promote: defineRoute({ method: 'POST', path: '/api/tasks/:id/promote-to-topic', auth: 'user', subject: 'tasks.http.promote', params: uuidParam, body: promoteBody, response: topicWithTasksReply, summary: "Turn a task into a topic: its subtasks become the topic's tasks (in order; sequential if asked), the task is gone", tag: TAG_TASKS }),
  undoPromote: defineRoute({ method: 'DELETE', path: '/api/tasks/:id/promote-to-topic', auth: 'user', subject: 'tasks.http.promote.undo', params: uuidParam, response: breakdownReply, summary: `Undo a promote-to-topic (within ${PROMOTE_UNDO_MINUTES} minutes, while the topic holds only the tasks it was made with): the task is back with its subtasks, the topic gone`, tag: TAG_TASKS }),
  snooze: defineRoute({ method: 'POST', path: '/api/tasks/:id/snooze', auth: 'user', subject: 'tasks.http.snooze', params: uuidParam, body: snoozeBody, response: taskReply, status: 200, summary: 'Snooze a task until a future date', tag: TAG_TASKS }),
  unsnooze: defineRoute({ method: 'DELETE', path: '/api/tasks/:id/snooze', auth: 'user', subject: 'tasks.http.unsnooze', params: uuidParam, response: taskReply, summary: 'Wake a snoozed task', tag: TAG_TASKS }),
  pause: defineRoute({ method: 'POST', path: '/api/tasks/:id/pause', auth: 'user', subject: 'tasks.http.pause', params: uuidParam, body: z.object({ until: calendarDate.nullable().optional(), timezone: clientTimezone }).strict().optional(), response: taskReply, status: 200, summary: 'Pause a task (until a date, or until resumed): no quest, no reminders', tag: TAG_TASKS }),
  resume: defineRoute({ method: 'POST', path: '/api/tasks/:id/resume', auth: 'user', subject: 'tasks.http.resume', params: uuidParam, body: timezoneOnly, response: taskReply, status: 200, summary: 'Resume a paused task', tag: TAG_TASKS }),
  postpone: defineRoute({ method: 'POST', path: '/api/tasks/:id/postpone', auth: 'user', subject: 'tasks.http.postpone', params: uuidParam, body: timezoneOnly, response: taskReply, status: 200, summary: 'Postpone a task to tomorrow (due date and snooze), counting the postponement', tag: TAG_TASKS }),
  listTopics: defineRoute({ method: 'GET', path: '/api/topics', auth: 'user', subject: 'tasks.http.topics.list', query: listTopicsQuery, response: topicListReply, summary: 'List topics with task counts', tag: TAG_TOPICS }),
  createTopic: defineRoute({ method: 'POST', path: '/api/topics', auth: 'user', subject: 'tasks.http.topics.create', body: createTopicBody, response: topicReply, summary: 'Create a topic', tag: TAG_TOPICS }),
  reorderTopics: defineRoute({ method: 'PUT', path: '/api/topics/reorder', auth: 'user', subject: 'tasks.http.topics.reorder', body: reorderTopicsBody, response: successReply, summary: 'Order topics (array index becomes the sort order)', tag: TAG_TOPICS }),
  reorderTopicsPost: defineRoute({ method: 'POST', path: '/api/topics/reorder', auth: 'user', subject: 'tasks.http.topics.reorder.post', body: reorderTopicsBody, response: successReply, status: 200, summary: 'Order topics (same as PUT)', tag: TAG_TOPICS }),
  getTopic: defineRoute({ method: 'GET', path: '/api/topics/:id', auth: 'user', subject: 'tasks.http.topics.get', params: uuidParam, response: topicWithTasksReply, summary: 'Get a topic with its tasks', tag: TAG_TOPICS }),
  updateTopic: defineRoute({ method: 'PATCH', path: '/api/topics/:id', auth: 'user', subject: 'tasks.http.topics.update', params: uuidParam, body: updateTopicBody, response: topicReply, summary: 'Update a topic', tag: TAG_TOPICS }),
  deleteTopic: defineRoute({ method: 'DELETE', path: '/api/topics/:id', auth: 'user', subject: 'tasks.http.topics.delete', params: uuidParam, response: successReply, summary: 'Delete a topic (its tasks lose their topic)', tag: TAG_TOPICS }),
  reorderTopicTasks: defineRoute({ method: 'PUT', path: '/api/topics/:id/reorder', auth: 'user', subject: 'tasks.http.topics.reorderTasks', params: uuidParam, body: reorderTasksBody, response: successReply, summary: "Order a topic's tasks (array index becomes the sort order)", tag: TAG_TOPICS }),
  getTimezone: defineRoute({ method: 'GET', path: '/api/settings/timezone', auth: 'user', subject: 'tasks.http.timezone.get', response: timezoneReply, summary: "The user's IANA timezone (default UTC)", tag: TAG_SETTINGS }),
  setTimezone: defineRoute({ method: 'PATCH', path: '/api/settings/timezone', auth: 'user', subject: 'tasks.http.timezone.set', body: timezoneBody, response: successReply.extend({ timezone: z.string() }), summary: "Set the user's IANA timezone", tag: TAG_SETTINGS }),
  setTimezonePut: defineRoute({ method: 'PUT', path: '/api/settings/timezone', auth: 'user', subject: 'tasks.http.timezone.put', body: timezoneBody, response: successReply.extend({ timezone: z.string() }), summary: "Set the user's IANA timezone (same as PATCH)", tag: TAG_SETTINGS }),
  getTaskSettings: defineRoute({ method: 'GET', path: '/api/settings/tasks', auth: 'user', subject: 'tasks.http.settings.tasks.get', response: taskSettings, summary: 'Task settings: whether completing the last open subtask completes its parent', tag: TAG_SETTINGS }),
  setTaskSettings: defineRoute({ method: 'PUT', path: '/api/settings/tasks', auth: 'user', subject: 'tasks.http.settings.tasks.put', body: taskSettingsBody, response: taskSettings, summary: 'Change task settings', tag: TAG_SETTINGS }),
  getProfile: defineRoute({ method: 'GET', path: '/api/settings/profile', auth: 'user', subject: 'tasks.http.profile.get', response: z.object({ profile }), summary: "The user's task profile: timezone, coins, reminder settings", tag: TAG_SETTINGS }),
  feedStatus: defineRoute({ method: 'GET', path: '/api/settings/calendar-feed', auth: 'user', subject: 'tasks.http.feed.status', response: calendarFeedStatus, summary: 'Whether a calendar feed URL exists (the token is never shown again)', tag: TAG_CALENDAR }),
  feedRotate: defineRoute({ method: 'POST', path: '/api/settings/calendar-feed', auth: 'user', subject: 'tasks.http.feed.rotate', body: z.object({}).strict().optional(), response: calendarFeedCreated, status: 200, summary: 'Create or rotate the secret calendar feed URL (shown once)', tag: TAG_CALENDAR }),
  feedRevoke: defineRoute({ method: 'DELETE', path: '/api/settings/calendar-feed', auth: 'user', subject: 'tasks.http.feed.revoke', response: successReply, summary: 'Revoke the calendar feed URL', tag: TAG_CALENDAR }),
  feed: defineRoute({ method: 'GET', path: '/api/calendar/:file', auth: 'none', subject: 'tasks.http.feed.ics', params: z.object({ file: feedFile }).strict(), response: rawResponse, kind: 'raw', summary: 'iCal feed (`/api/calendar/<token>.ics`); the secret token is the only authentication', tag: TAG_CALENDAR }),
};

/** HTTP routes of the tasks service (tasks, topics, iCal, profile settings). */
export const tasksRoutes: AnyRoute[] = Object.values(tasksApi);
