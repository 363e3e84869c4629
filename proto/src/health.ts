import { z } from 'zod';
import { defineRpc, type Rpc } from './bus.ts';

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

// ---- Key figures from the metrics registries (the admin page's "live figures") -----------------

const count = z.number().nonnegative();

/** Answered HTTP requests by status class: since the process started, and over the recent window. */
export const httpFigures = z.object({
  requests: count,
  clientErrors: count,
  serverErrors: count,
  /** the same counts over the last 5 minutes (`seconds` is shorter while the process is younger) */
  recent: z.object({ seconds: count, requests: count, clientErrors: count, serverErrors: count }),
});
export type HttpFigures = z.infer<typeof httpFigures>;

export const outboxFigures = z.object({ schema: z.string(), pending: count, oldestPendingSeconds: count });
export type OutboxFigures = z.infer<typeof outboxFigures>;

/** Webhook deliveries since the process started: finished (delivered, failed = given up) and attempts to be retried. */
export const webhookFigures = z.object({ delivered: count, failed: count, retried: count });
export type WebhookFigures = z.infer<typeof webhookFigures>;

/** Cron calls and the job runs this scheduler claimed since it started. */
export const cronFigures = z.object({
  calls: count,
  failedCalls: count,
  jobs: z.array(z.object({ job: z.string(), runs: count, failed: count, notifications: count })),
});
export type CronFigures = z.infer<typeof cronFigures>;

/** The parts of a process's figures a service owns (its ServiceDefinition says which). */
export const serviceFigures = z.object({
  http: httpFigures.optional(),
  outbox: z.array(outboxFigures).optional(),
  webhooks: webhookFigures.optional(),
  cron: cronFigures.optional(),
});
export type ServiceFigures = z.infer<typeof serviceFigures>;

/** `svc.<name>.metrics`: one service's figures, read from the registry of the process that answered. */
export const metricsSummary = serviceFigures.extend({
  service: z.string(),
  /** `host:pid` of the answering process */
  instance: z.string(),
  /** when that process started: its counters count from then */
  startedAt: z.string(),
});
export type MetricsSummary = z.infer<typeof metricsSummary>;
export function metricsSummaryRpc(service: string): Rpc<Record<string, never>, MetricsSummary> {
  return defineRpc(`svc.${service}.metrics`, z.object({}).strict() as z.ZodType<Record<string, never>>, metricsSummary);
}

const from = { instance: z.string() };
/** GET /api/admin/metrics: each figure from the process of the service that owns it. */
export const adminMetrics = z.object({
  generatedAt: z.string(),
  /** every process that answered, with the services it runs: one under `npm start` */
  processes: z.array(z.object({ instance: z.string(), startedAt: z.string(), services: z.array(z.string()) })),
  /** services that did not answer in time (their figures are null or left out) */
  missing: z.array(z.string()),
  http: httpFigures.extend(from).nullable(),
  outbox: z.array(outboxFigures.extend(from)),
  webhooks: webhookFigures.extend(from).nullable(),
  cron: cronFigures.extend(from).nullable(),
});
export type AdminMetrics = z.infer<typeof adminMetrics>;
