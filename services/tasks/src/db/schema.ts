import { sql } from 'drizzle-orm';
import { boolean, check, customType, date, foreignKey, index, integer, jsonb, pgSchema, primaryKey, smallint, text, timestamp, unique, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { energyLevel, IMPORT_FORMATS, IMPORT_STATUSES, recurrenceType, taskPriority, taskType, wishlistItem, type CronJob } from '@tasksvc/proto';
import type { Reminder } from '@tasksvc/proto/calendar/reminders.ts';
import { bytea, oneOf, timeOfDay } from '@tasksvc/runtime/db/columns.ts';

/**
 * The tasks service's tables (schema `tasks`), declared once: row and insert types are inferred from
 * here (camelCase keys, snake_case columns), and migrations are generated from it
 * (docs/architecture.md, Data layer; "A new task field"). Enumerations come from proto, so a value
 * the API accepts is one the database accepts. Users live in the auth service: no cross-schema keys,
 * so the services stay independently deployable.
 */
export const schema = pgSchema('tasks');

/** A zod enum's values as the tuple drizzle's `text({ enum })` takes. */
const values = <T extends string>(e: { options: T[] }) => e.options as [T, ...T[]];
const TASK_TYPES = values(taskType);
const PRIORITIES = values(taskPriority);
const ENERGY = values(energyLevel);
const RECURRENCE_TYPES = values(recurrenceType);
const WISHLIST_STATUSES = values(wishlistItem.shape.status);
const POSTPONE_VIA = ['quest', 'task'] as const;

const instant = () => timestamp({ withTimezone: true });
/** A calendar date in the user's zone, `YYYY-MM-DD` (never a JS Date). */
const day = () => date({ mode: 'string' });
const created = () => instant().notNull().defaultNow();
/**
 * The transaction that last changed a row (PostgreSQL's 64-bit xid8, read as its decimal text): CalDAV
 * sync tokens compare it with a snapshot's xmin, which is right however transactions interleave
 * (docs/caldav.md, Sync). Set by the column default on insert and by each UPDATE that changes what a
 * client sees, in the same statement: no trigger, no extra statement on the REST hot paths.
 */
const changeXid = () => customType<{ data: string; driverData: string }>({ dataType: () => 'xid8' })().notNull().default(sql`pg_current_xact_id()`);

/**
 * Which profile settings switch each cron job on and set its local time, and the job's due index:
 * (timezone, local time, user id) over the users who have it on, which the reminder collection
 * (db/reports.ts) range-scans per zone and pages through (migration 0103_cron_due_indexes).
 */
export const JOB_SETTINGS = {
  'morning-briefing': { enabled: 'morningBriefingEnabled', time: 'morningBriefingTime', index: 'profiles_due_morning_briefing' },
  overdue: { enabled: 'overdueReminderEnabled', time: 'overdueReminderTime', index: 'profiles_due_overdue' },
  'due-today': { enabled: 'dueTodayReminderEnabled', time: 'dueTodayReminderTime', index: 'profiles_due_due_today' },
  'recurring-due': { enabled: 'recurringDueReminderEnabled', time: 'recurringDueReminderTime', index: 'profiles_due_recurring' },
  'daily-quest': { enabled: 'notificationEnabled', time: 'notificationTime', index: 'profiles_due_daily_quest' },
  'streak-reminder': { enabled: 'streakReminderEnabled', time: 'streakReminderTime', index: 'profiles_due_streak' },
  'weekly-review': { enabled: 'weeklyReviewEnabled', time: 'weeklyReviewTime', index: 'profiles_due_weekly_review' },
} as const satisfies Record<CronJob, { enabled: string; time: string; index: string }>;

/** One row per user, created on first use: settings, coins, streaks and where the next task goes. */
export const profiles = schema.table(
  'profiles',
  {
    userId: uuid().primaryKey(),
    timezone: text().notNull().default('UTC'),
    coins: integer().notNull().default(0),
    /** every coin ever earned (completions and achievements, less undone completions); spending never lowers it. The level comes from it. */
    coinsEarned: integer().notNull().default(0),
    totalTasksCreated: integer().notNull().default(0),
    vacationEndDate: day(),
    postponeLimit: smallint().notNull().default(3),
    notificationEnabled: boolean().notNull().default(false),
    notificationTime: timeOfDay().notNull().default('09:00:00'),
    dueTodayReminderEnabled: boolean().notNull().default(false),
    dueTodayReminderTime: timeOfDay().notNull().default('08:00:00'),
    recurringDueReminderEnabled: boolean().notNull().default(false),
    recurringDueReminderTime: timeOfDay().notNull().default('08:00:00'),
    overdueReminderEnabled: boolean().notNull().default(false),
    overdueReminderTime: timeOfDay().notNull().default('09:00:00'),
    morningBriefingEnabled: boolean().notNull().default(false),
    morningBriefingTime: timeOfDay().notNull().default('07:00:00'),
    weeklyReviewTime: timeOfDay().notNull().default('18:00:00'),
    /** the streak reminder's and the weekly review's own switches (they followed notificationEnabled before migration 0113, which copied it into both) */
    streakReminderEnabled: boolean().notNull().default(false),
    weeklyReviewEnabled: boolean().notNull().default(false),
    /** SHA-256 (hex) of the iCal feed token; the token itself is shown once and never stored */
    calendarFeedTokenHash: text(),
    calendarFeedCreatedAt: instant(),
    createdAt: created(),
    updatedAt: created(),
    streakCurrent: integer().notNull().default(0),
    streakMax: integer().notNull().default(0),
    streakLastDate: day(),
    /** 'YYYY-MM' of the calendar month (user's timezone) in which the shield was last used */
    streakShieldUsedMonth: text(),
    questStreakCurrent: integer().notNull().default(0),
    questStreakMax: integer().notNull().default(0),
    questStreakLastDate: day(),
    /** the streak reminder's local time (sent when a live streak has no activity yet that day) */
    streakReminderTime: timeOfDay().notNull().default('20:00:00'),
    /** the latest energy check-in, for the quest's energy match */
    energyLevel: text({ enum: ENERGY }),
    /** where a new task goes in its list: above every sort order the user's tasks have (no MAX scan on insert) */
    nextSortOrder: integer().notNull().default(0),
    /** how many tasks the user has: kept by the create and delete statements (db/tasks.ts, the only ones), so an unfiltered list reads its total instead of counting */
    taskCount: integer().notNull().default(0),
    /** a vacation runs from its first day to vacationEndDate (inclusive; null while open-ended) */
    vacationStartDate: day(),
    /** completing a task's last open subtask completes the task too (else the reply offers it) */
    autoCompleteParent: boolean().notNull().default(false),
  },
  (t) => [
    unique('profiles_calendar_feed_token_hash_key').on(t.calendarFeedTokenHash),
    // reminder lookups join profiles to the bucket's per-zone windows by timezone
    index('profiles_timezone').on(t.timezone, t.userId),
    ...Object.values(JOB_SETTINGS).map((j) => index(j.index).on(t.timezone, t[j.time], t.userId).where(sql`${t[j.enabled]}`)),
    check('profiles_coins_check', sql`coins >= 0`),
    check('profiles_postpone_limit_check', sql`postpone_limit BETWEEN 1 AND 5`),
    check('profiles_energy_level_check', oneOf('energy_level', ENERGY)),
  ],
);

/** What a topic made by promote-to-topic keeps of the task it was. */
export interface PromotedFrom {
  /** the task's row, keys as its columns are named */
  task: Record<string, unknown>;
  subtaskIds: string[];
}

export const topics = schema.table(
  'topics',
  {
    id: uuid().primaryKey().defaultRandom(),
    userId: uuid().notNull(),
    title: text().notNull(),
    description: text(),
    color: text(),
    icon: text(),
    priority: text({ enum: PRIORITIES }).notNull().default('NORMAL'),
    archived: boolean().notNull().default(false),
    /** only the first open task of a sequential topic is workable (the others are `blocked`) */
    sequential: boolean().notNull().default(false),
    defaultEnergyLevel: text({ enum: ENERGY }),
    sortOrder: integer().notNull().default(0),
    createdAt: created(),
    updatedAt: created(),
    /** brought by an import: it counts for no achievement */
    imported: boolean().notNull().default(false),
    /** the path segment of the topic's CalDAV collection when a client named it (MKCALENDAR); else its id */
    davName: text(),
    /**
     * Made by promote-to-topic: the task it was (its row as `to_jsonb` gave it) and the ids of the
     * subtasks that became its tasks, so the promote can be undone (docs/tasks.md, Promote to topic)
     */
    promotedFrom: jsonb().$type<PromotedFrom>(),
  },
  (t) => [
    uniqueIndex('topics_user_dav_name').on(t.userId, t.davName).where(sql`dav_name IS NOT NULL`),
    index('topics_user').on(t.userId, t.sortOrder, t.createdAt),
    check('topics_priority_check', oneOf('priority', PRIORITIES)),
    check('topics_default_energy_level_check', oneOf('default_energy_level', ENERGY)),
  ],
);

export const tasks = schema.table(
  'tasks',
  {
    id: uuid().primaryKey().defaultRandom(),
    userId: uuid().notNull(),
    topicId: uuid(),
    /**
     * The task this one is a subtask of (one level: a parent is never itself a subtask, and a subtask
     * is in its parent's topic and never RECURRING; docs/tasks.md). Deleting a parent deletes its subtasks.
     */
    parentId: uuid(),
    /** a parent's subtasks, and how many of them are done: kept by a trigger on every change of a subtask (migration 0110_subtask_rules) */
    subtaskCount: integer().notNull().default(0),
    subtasksDone: integer().notNull().default(0),
    title: text().notNull(),
    notes: text(),
    type: text({ enum: TASK_TYPES }).notNull(),
    priority: text({ enum: PRIORITIES }).notNull().default('NORMAL'),
    recurrenceType: text({ enum: RECURRENCE_TYPES }),
    recurrenceInterval: integer(),
    /** 0 = Monday … 6 = Sunday */
    recurrenceWeekdays: smallint().array(),
    recurrenceWeekOfMonth: smallint(),
    recurrenceFixed: boolean().notNull().default(false),
    /** the date the recurrence schedule is counted from (proto/src/calendar/recurrence.ts) */
    recurrenceAnchor: day(),
    dueDate: day(),
    nextDueDate: day(),
    /** the local time of day it is due (`HH:MM` in the user's zone); only with a due date */
    dueTime: timeOfDay(),
    /** up to 5, absolute (`{ at }`) or before the due time (`{ beforeDueMinutes }`); the scheduler fires them */
    reminders: jsonb().$type<Reminder[]>().notNull().default([]),
    completedAt: instant(),
    coinValue: integer().notNull().default(1),
    isDailyQuest: boolean().notNull().default(false),
    dailyQuestDate: day(),
    postponeCount: integer().notNull().default(0),
    estimatedMinutes: integer(),
    snoozedUntil: day(),
    energyLevel: text({ enum: ENERGY }),
    sortOrder: integer().notNull().default(0),
    pausedAt: instant(),
    pausedUntil: day(),
    createdAt: created(),
    updatedAt: created(),
    changeXid: changeXid(),
  },
  (t) => [
    foreignKey({ name: 'tasks_topic_id_fkey', columns: [t.topicId], foreignColumns: [topics.id] }).onDelete('set null'),
    foreignKey({ name: 'tasks_parent_id_fkey', columns: [t.parentId], foreignColumns: [t.id] }).onDelete('cascade'),
    // a parent's subtasks; partial, so a task without a parent (nearly every insert) leaves it alone.
    // Also what the foreign key's check reads when any task is deleted.
    index('tasks_parent').on(t.parentId, t.sortOrder, t.createdAt, t.id).where(sql`parent_id IS NOT NULL`),
    index('tasks_user_order').on(t.userId, t.sortOrder, t.createdAt, t.id),
    // serves per-topic listing and the sequential-topic "blocked" check
    index('tasks_user_topic_order').on(t.userId, t.topicId, t.sortOrder, t.createdAt, t.id),
    // open work by due date for the due-today / overdue reminders and quest selection
    index('tasks_user_open_due').on(t.userId, t.dueDate).where(sql`completed_at IS NULL`),
    // CalDAV: a collection's changes since a sync token, and its newest change
    index('tasks_user_topic_change').on(t.userId, t.topicId, t.changeXid),
    // first_high_priority's probe (db/achievements.ts) goes from the user's HIGH tasks to their completions
    index('tasks_user_high').on(t.userId).where(sql`priority = 'HIGH'`),
    check('tasks_type_check', oneOf('type', TASK_TYPES)),
    check('tasks_priority_check', oneOf('priority', PRIORITIES)),
    check('tasks_recurrence_type_check', oneOf('recurrence_type', RECURRENCE_TYPES)),
    check('tasks_energy_level_check', oneOf('energy_level', ENERGY)),
    check('tasks_check', sql`type <> 'RECURRING' OR (recurrence_type IS NOT NULL AND next_due_date IS NOT NULL AND recurrence_anchor IS NOT NULL)`),
    check('tasks_check1', sql`type <> 'RECURRING' OR completed_at IS NULL`),
    check('tasks_due_time_check', sql`due_time IS NULL OR COALESCE(next_due_date, due_date) IS NOT NULL`),
    check('tasks_parent_check', sql`parent_id IS NULL OR (parent_id <> id AND type <> 'RECURRING')`),
  ],
);

/**
 * One row per completion. coinsAwarded is what the completion granted (undo takes back exactly
 * that); the previous* columns let an undo restore a RECURRING task's schedule.
 */
export const taskCompletions = schema.table(
  'task_completions',
  {
    id: uuid().primaryKey().defaultRandom(),
    taskId: uuid(),
    userId: uuid().notNull(),
    completedAt: instant().notNull(),
    localDate: day().notNull(),
    coinsAwarded: integer().notNull().default(0),
    previousNextDueDate: day(),
    previousAnchor: day(),
    createdAt: instant().notNull().default(sql`clock_timestamp()`),
    /** it completed the day's quest (quest streak, first_quest, double_shift) */
    wasDailyQuest: boolean().notNull().default(false),
    /** history brought by an import: it earned nothing here and counts for no achievement */
    imported: boolean().notNull().default(false),
    /** the completed task was a subtask of this task (it earns no coins and counts toward no "tasks completed" achievement) */
    subtaskOf: uuid(),
    /** made along with that completion (a parent's subtasks completed with it, a parent completed by its last subtask): undoing that one undoes this one */
    partOf: uuid(),
    /** a RECURRING parent's subtasks this completion reopened for the next occurrence, as they were (an undo puts them back) */
    resetSubtasks: jsonb().$type<{ id: string; completedAt: string }[]>(),
  },
  (t) => [
    foreignKey({ name: 'task_completions_task_id_fkey', columns: [t.taskId], foreignColumns: [tasks.id] }).onDelete('set null'),
    index('task_completions_task').on(t.taskId, t.createdAt.desc().nullsFirst()),
    index('task_completions_part_of').on(t.partOf).where(sql`part_of IS NOT NULL`),
    index('task_completions_user_date').on(t.userId, t.localDate),
    // the achievements' capped counts (db/achievements.ts): a scan that meets only the rows it counts
    index('task_completions_counted').on(t.userId).where(sql`NOT imported AND subtask_of IS NULL`),
    index('task_completions_quest').on(t.userId).where(sql`was_daily_quest`),
  ],
);

/** One quest per user per local day: the key makes selection idempotent under concurrent GETs, cron runs and replicas. */
export const dailyQuests = schema.table(
  'daily_quests',
  {
    userId: uuid().notNull(),
    localDate: day().notNull(),
    taskId: uuid().notNull(),
    tier: text().notNull(),
    completedAt: instant(),
    createdAt: created(),
    /** tasks re-rolled away from today, avoided by the next re-roll while others qualify */
    rerolledAway: uuid().array().notNull().default(sql`'{}'::uuid[]`),
  },
  (t) => [
    primaryKey({ name: 'daily_quests_pkey', columns: [t.userId, t.localDate] }),
    foreignKey({ name: 'daily_quests_task_id_fkey', columns: [t.taskId], foreignColumns: [tasks.id] }).onDelete('cascade'),
  ],
);

/** Every postponement counts against the one daily limit; only the quest's own can be restored through the quest. */
export const questPostponements = schema.table(
  'quest_postponements',
  {
    id: uuid().primaryKey().defaultRandom(),
    userId: uuid().notNull(),
    taskId: uuid().notNull(),
    localDate: day().notNull(),
    previousDueDate: day(),
    previousSnoozedUntil: day(),
    restoredAt: instant(),
    createdAt: instant().notNull().default(sql`clock_timestamp()`),
    via: text({ enum: POSTPONE_VIA }).notNull().default('quest'),
  },
  (t) => [
    foreignKey({ name: 'quest_postponements_task_id_fkey', columns: [t.taskId], foreignColumns: [tasks.id] }).onDelete('cascade'),
    index('quest_postponements_user_date').on(t.userId, t.localDate),
    check('quest_postponements_via_check', oneOf('via', POSTPONE_VIA)),
  ],
);

/** Unlocks are idempotent (one row per user and achievement); their coins are booked here, apart from task coins. */
export const userAchievements = schema.table(
  'user_achievements',
  {
    userId: uuid().notNull(),
    achievementKey: text().notNull(),
    coinsAwarded: integer().notNull(),
    unlockedAt: created(),
  },
  (t) => [primaryKey({ name: 'user_achievements_pkey', columns: [t.userId, t.achievementKey] }), index('user_achievements_recent').on(t.userId, t.unlockedAt.desc().nullsFirst())],
);

/** Things a person buys with their coins; bought and discarded items stay as history. */
export const wishlistItems = schema.table(
  'wishlist_items',
  {
    id: uuid().primaryKey().defaultRandom(),
    userId: uuid().notNull(),
    title: text().notNull(),
    price: integer().notNull(),
    url: text(),
    status: text({ enum: WISHLIST_STATUSES }).notNull().default('OPEN'),
    createdAt: created(),
    closedAt: instant(),
    /** brought by an import: a purchase made elsewhere counts for no achievement */
    imported: boolean().notNull().default(false),
  },
  (t) => [
    index('wishlist_items_user').on(t.userId, t.createdAt),
    check('wishlist_items_price_check', sql`price >= 0`),
    check('wishlist_items_status_check', oneOf('status', WISHLIST_STATUSES)),
  ],
);

/** Energy check-ins: one per user and local day, the latest wins. */
export const energyCheckins = schema.table(
  'energy_checkins',
  {
    userId: uuid().notNull(),
    localDate: day().notNull(),
    level: text({ enum: ENERGY }).notNull(),
    createdAt: created(),
  },
  (t) => [primaryKey({ name: 'energy_checkins_pkey', columns: [t.userId, t.localDate] }), check('energy_checkins_level_check', oneOf('level', ENERGY))],
);

/**
 * Spent reminder action links (Done / Snooze 1 h), by the nonce the links of one notification
 * share: a link works once. Kept a little longer than a link lives (action-links.ts), then pruned.
 */
export const reminderActionUses = schema.table(
  'reminder_action_uses',
  {
    nonce: text().primaryKey(),
    userId: uuid().notNull(),
    taskId: uuid().notNull(),
    action: text().notNull(),
    usedAt: created(),
  },
  (t) => [index('reminder_action_uses_used_at').on(t.usedAt)],
);

/**
 * Imports (docs/moving.md): one row per uploaded file, from its preview to its result. The file
 * itself stays in import_chunks (as the gateway handed it over, piece by piece) until the import
 * is done, cancelled or expired: the confirm reads it again rather than trusting a stored plan.
 */
export const imports = schema.table(
  'imports',
  {
    id: uuid().primaryKey(),
    userId: uuid().notNull(),
    status: text({ enum: IMPORT_STATUSES }).notNull(),
    format: text({ enum: IMPORT_FORMATS }).notNull(),
    fileName: text().notNull(),
    bytes: integer().notNull(),
    sha256: text().notNull(),
    /** the day (user's zone) the preview was made on: relative dates of the file are read as of then, at the confirm too */
    referenceDate: day().notNull(),
    /** the user's zone then: instants of the file become calendar dates in it, at the confirm too */
    timeZone: text().notNull(),
    /** the digest of what the preview showed; the confirm imports only an identical plan */
    planDigest: text().notNull(),
    /** the preview as the API shows it (ImportView.preview, with the whole lists) */
    preview: jsonb().notNull(),
    progressDone: integer().notNull().default(0),
    progressTotal: integer().notNull().default(0),
    /** the runner of a running import touches this; a stale one was interrupted (and wrote nothing) */
    heartbeatAt: instant(),
    result: jsonb(),
    error: text(),
    createdAt: created(),
    updatedAt: created(),
    expiresAt: instant().notNull(),
  },
  (t) => [
    index('imports_user').on(t.userId, t.createdAt),
    index('imports_expires').on(t.expiresAt),
    check('imports_status_check', oneOf('status', IMPORT_STATUSES)),
    check('imports_format_check', oneOf('format', IMPORT_FORMATS)),
  ],
);

/** The pieces of an uploaded file, in order (a bus message has a size limit). */
export const importChunks = schema.table(
  'import_chunks',
  {
    importId: uuid().notNull(),
    userId: uuid().notNull(),
    seq: integer().notNull(),
    data: bytea().notNull(),
    createdAt: created(),
  },
  (t) => [primaryKey({ name: 'import_chunks_pkey', columns: [t.importId, t.seq] }), index('import_chunks_created').on(t.createdAt)],
);

/**
 * What earlier imports brought, per user, by the item's id in its source (`todoist:…`, `ics:<UID>`,
 * `momo:task:<id>`…): importing the same file twice adds nothing. `targetId` is the row it became.
 */
export const importSources = schema.table(
  'import_sources',
  {
    userId: uuid().notNull(),
    sourceKey: text().notNull(),
    kind: text().notNull(),
    targetId: uuid(),
    importId: uuid().notNull(),
    createdAt: created(),
  },
  (t) => [primaryKey({ name: 'import_sources_pkey', columns: [t.userId, t.sourceKey] })],
);

/**
 * What a CalDAV client gave a task beyond its fields: the resource name it PUT it under, its UID and
 * the iCalendar properties and components the task has no field for (vtodo.ts KeptProperties),
 * returned unchanged. A task made elsewhere has no row: its name is `<id>.ics`, its UID `taskUid(id)`.
 */
export const caldavObjects = schema.table(
  'caldav_objects',
  {
    taskId: uuid().primaryKey(),
    userId: uuid().notNull(),
    name: text().notNull(),
    uid: text().notNull(),
    kept: jsonb().$type<{ props: unknown[]; components: unknown[]; priority?: number | null; alarms?: unknown[] }>().notNull(),
  },
  (t) => [
    foreignKey({ name: 'caldav_objects_task_id_fkey', columns: [t.taskId], foreignColumns: [tasks.id] }).onDelete('cascade'),
    unique('caldav_objects_user_name').on(t.userId, t.name),
    unique('caldav_objects_user_uid').on(t.userId, t.uid),
  ],
);

/**
 * A resource that left a CalDAV collection (its task deleted, or moved to another topic), so an
 * incremental sync reports it removed. Kept CALDAV_TOMBSTONE_DAYS; older sync tokens expire.
 */
export const caldavTombstones = schema.table(
  'caldav_tombstones',
  {
    userId: uuid().notNull(),
    /** the collection it left: a topic, or null for the tasks without one */
    topicId: uuid(),
    name: text().notNull(),
    changeXid: changeXid(),
    createdAt: created(),
  },
  (t) => [index('caldav_tombstones_user_topic_change').on(t.userId, t.topicId, t.changeXid), index('caldav_tombstones_created').on(t.createdAt)],
);
