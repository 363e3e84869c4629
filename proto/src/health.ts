import { z } from 'zod';
import { defineRpc } from './bus.ts';

/** The `cron` value of GET /api/health: when the unified cron dispatcher last ran. */
export const cronStatus = z.object({
  lastRunAt: z.string().nullable(),
  minutesSinceLastRun: z.number().nullable(),
});
export type CronStatus = z.infer<typeof cronStatus>;

export const cronStatusRpc = defineRpc('scheduler.cron.status', z.object({}).strict(), cronStatus);

export const healthResponse = z.object({
  status: z.enum(['ok', 'error']),
  version: z.string(),
  commit: z.string().nullable(),
  timestamp: z.string(),
  cron: cronStatus.nullable(),
});
export type HealthResponse = z.infer<typeof healthResponse>;
