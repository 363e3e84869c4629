import { z } from 'zod';
import { defineRpc } from './bus.ts';
import type { AnyRoute } from './http.ts';
import { notificationTag } from './notify.ts';

/** HTTP routes of the game rules (daily quest, streaks, achievements, review, stats) and cron. */
export const gameRoutes: AnyRoute[] = [];

// ── Cron ────────────────────────────────────────────────────────────────────────────────────────

/** The cron jobs, in the order one run dispatches them (reference §9). */
export const CRON_JOBS = ['morning-briefing', 'overdue', 'due-today', 'recurring-due', 'daily-quest', 'streak-reminder', 'weekly-review'] as const;
export const cronJob = z.enum(CRON_JOBS);
export type CronJob = z.infer<typeof cronJob>;

/** Cron work is cut into 5-minute buckets aligned to UTC (every zone offset is a multiple of 5 minutes). */
export const CRON_BUCKET_MINUTES = 5;
export const CRON_BUCKET_MS = CRON_BUCKET_MINUTES * 60_000;
export function cronBucketStart(t: Date): Date {
  return new Date(Math.floor(t.getTime() / CRON_BUCKET_MS) * CRON_BUCKET_MS);
}

export const cronJobRun = z.object({
  job: z.string(),
  /** start of the 5-minute UTC bucket, ISO 8601 */
  bucket: z.string(),
  /** `ran`: this call did it; `skipped`: another call or replica has it (or had it) */
  status: z.enum(['ran', 'skipped', 'failed']),
  /** users due in this bucket (before per-user filters) */
  users: z.number().int(),
  /** notifications newly requested by this run */
  notifications: z.number().int(),
  error: z.string().optional(),
});
export type CronJobRun = z.infer<typeof cronJobRun>;

/** Reply of POST /api/cron (HTTP 200). */
export const cronRunSummary = z.object({
  ok: z.boolean(),
  ranAt: z.string(),
  buckets: z.array(z.string()),
  jobs: z.array(cronJobRun),
  durationMs: z.number(),
});
export type CronRunSummary = z.infer<typeof cronRunSummary>;

/** The gateway's POST /api/cron, once authorised, asks the scheduler to dispatch. */
export const cronRunRpc = defineRpc('scheduler.cron.run', z.object({}).strict(), cronRunSummary);

/** One notification the tasks service drafts for the scheduler to request (minus idempotency). */
export const reminderDraft = z.object({
  userId: z.uuid(),
  title: z.string().min(1).max(200),
  body: z.string().max(4000),
  url: z.string().nullable(),
  tag: notificationTag,
  dedupeKey: z.string().min(1).max(300),
});
export type ReminderDraft = z.infer<typeof reminderDraft>;

/**
 * Set-based collection: every user whose configured local time for `job` falls in the bucket,
 * paged by user id so a reply stays far below the bus's message size limit.
 */
export const collectRemindersRpc = defineRpc(
  'tasks.game.collectReminders',
  z
    .object({
      job: cronJob,
      bucketStart: z.iso.datetime(),
      afterUserId: z.uuid().nullable(),
      limit: z.number().int().min(1).max(5_000),
    })
    .strict(),
  z.object({
    /** users due in this bucket on this page (before per-user filters such as "nothing due") */
    users: z.number().int(),
    drafts: z.array(reminderDraft),
    /** pass as afterUserId for the next page; null when done */
    nextAfterUserId: z.uuid().nullable(),
  }),
);

// ── Update check ────────────────────────────────────────────────────────────────────────────────

export const updateStatus = z.object({
  status: z.enum(['current', 'outdated', 'failed', 'disabled', 'unknown']),
  currentVersion: z.string(),
  latestVersion: z.string().nullable(),
  /** when the release listing was last asked (successfully or not) */
  checkedAt: z.string().nullable(),
  error: z.string().nullable(),
});
export type UpdateStatus = z.infer<typeof updateStatus>;

/** For the admin page's banner. */
export const updateStatusRpc = defineRpc('scheduler.update.status', z.object({}).strict(), updateStatus);
