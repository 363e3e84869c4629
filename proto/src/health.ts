import { z } from 'zod';
import { defineRpc } from './bus.ts';

/** The `cron` value of GET /api/health: when the unified cron dispatcher last ran. */
export const cronStatus = z.object({
  lastRunAt: z.string().nullable(),
  minutesSinceLastRun: z.number().nullable(),
});
export type CronStatus = z.infer<typeof cronStatus>;

export const cronStatusRpc = defineRpc('scheduler.cron.status', z.object({}).strict(), cronStatus);

/** For the admin page: the health figures plus the last run of every job. */
export const cronJobsStatus = cronStatus.extend({
  jobs: z.array(
    z.object({
      job: z.string(),
      /** start of the 5-minute bucket the run was for */
      bucket: z.string(),
      status: z.string(),
      startedAt: z.string(),
      finishedAt: z.string().nullable(),
      durationMs: z.number().int().nullable(),
      /** notifications newly requested, when the job reports them */
      notifications: z.number().int().nullable(),
    }),
  ),
});
export type CronJobsStatus = z.infer<typeof cronJobsStatus>;
export const cronJobsRpc = defineRpc('scheduler.cron.jobs', z.object({}).strict(), cronJobsStatus);

export const healthResponse = z.object({
  status: z.enum(['ok', 'error']),
  version: z.string(),
  commit: z.string().nullable(),
  timestamp: z.string(),
  cron: cronStatus.nullable(),
});
export type HealthResponse = z.infer<typeof healthResponse>;
