import { sql } from 'drizzle-orm';
import { boolean, check, index, jsonb, pgSchema, primaryKey, smallint, text, timestamp, uuid } from 'drizzle-orm/pg-core';

/**
 * The scheduler's tables (schema `scheduler`), declared once: row and insert types are inferred from
 * here, and migrations are generated from it (docs/architecture.md, Data layer).
 */
export const scheduler = pgSchema('scheduler');

/**
 * One row per cron job per 5-minute bucket: the key makes every job idempotent across replicas and
 * repeated calls, and the rows are the history shown in health and admin.
 */
export const cronRuns = scheduler.table(
  'cron_runs',
  {
    job: text().notNull(),
    bucket: timestamp({ withTimezone: true }).notNull(),
    startedAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    finishedAt: timestamp({ withTimezone: true }),
    /** running, done or failed */
    status: text().notNull().default('running'),
    /** what a run did (`{ users, notifications }`) or why it failed (`{ error }`) */
    detail: jsonb().$type<Record<string, unknown>>(),
  },
  (t) => [primaryKey({ name: 'cron_runs_pkey', columns: [t.job, t.bucket] }), index('cron_runs_started').on(t.startedAt.desc().nullsFirst())],
);

/**
 * Notifications this scheduler has requested, by the notification's stable dedupe key
 * (`streak:<user>:<local date>`, …): a reminder goes out at most once per logical notification,
 * across repeated and concurrent calls, replicas, caught-up buckets and the repeated DST hour.
 */
export const cronSent = scheduler.table(
  'cron_sent',
  {
    dedupeKey: text().primaryKey(),
    job: text().notNull(),
    bucket: timestamp({ withTimezone: true }).notNull(),
    userId: uuid().notNull(),
    sentAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  // Every index here is paid per notification: nothing reads it by (job, bucket), and the daily
  // cleanup's range over sent_at (which only grows) is served by a BRIN index (0003_cron_sent_indexes).
  (t) => [index('cron_sent_sent_at').using('brin', t.sentAt)],
);

/**
 * The update check's single state row, shared by every replica: the release listing is asked at most
 * once per 24 hours (1 hour after a failure), and the admin page sees when it was last asked.
 */
export const updateCheck = scheduler.table(
  'update_check',
  {
    id: smallint().primaryKey().default(1),
    ok: boolean(),
    latestVersion: text(),
    error: text(),
    checkedAt: timestamp({ withTimezone: true }),
    nextCheckAt: timestamp({ withTimezone: true }).notNull().default(sql`'-infinity'`),
    leaseUntil: timestamp({ withTimezone: true }),
  },
  () => [check('update_check_id_check', sql`id = 1`)],
);

/**
 * The reminders' due-queue: one row per reminder instant still to fire (and, once fired, kept as
 * its record a while: a redelivered older schedule then cannot queue it again). The timer asks only
 * for the earliest unsent row (`reminder_queue_due`), and the claim takes due rows FOR UPDATE SKIP
 * LOCKED, so its cost does not grow with the reminders waiting in the future.
 */
export const reminderQueue = scheduler.table(
  'reminder_queue',
  {
    taskId: uuid().notNull(),
    /** the reminder within its task (`before:30`, `at:<instant>`) */
    reminderKey: text().notNull(),
    fireAt: timestamp({ withTimezone: true }).notNull(),
    userId: uuid().notNull(),
    /** the time of the task event whose schedule queued it last: older schedules never remove it */
    version: timestamp({ withTimezone: true }).notNull(),
    /** when it was handled (sent, dropped or moved); null while it waits */
    handledAt: timestamp({ withTimezone: true }),
    /** sent, or why not: deleted, completed, removed, paused, vacation, moved */
    outcome: text(),
  },
  (t) => [
    primaryKey({ name: 'reminder_queue_pkey', columns: [t.taskId, t.reminderKey, t.fireAt] }),
    index('reminder_queue_due').on(t.fireAt).where(sql`handled_at IS NULL`),
    index('reminder_queue_handled_at').using('brin', t.handledAt),
  ],
);
