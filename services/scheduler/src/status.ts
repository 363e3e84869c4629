import type { CronJobsStatus, CronStatus } from '@tasksvc/proto';
import { jsonView, type Pool } from '@tasksvc/runtime';
import { lastStarted, latestRuns } from './db/cron.ts';

/** The job whose runs stand for "cron ran" in GET /api/health (every run dispatches it). */
export const HEALTH_CRON_JOB = 'daily-quest';

/** When the dispatcher last ran: the health figure. */
export async function cronStatus(pool: Pool): Promise<CronStatus> {
  const last = await lastStarted(pool, HEALTH_CRON_JOB);
  return { lastRunAt: last ? last.toISOString() : null, minutesSinceLastRun: last ? Math.floor((Date.now() - last.getTime()) / 60_000) : null };
}

/** The health figure plus the latest run of every job, for the admin page. */
export async function cronJobs(pool: Pool): Promise<CronJobsStatus> {
  const rows = await latestRuns(pool);
  return {
    ...(await cronStatus(pool)),
    jobs: rows.map((r) => ({ ...jsonView(r), durationMs: r.finishedAt ? r.finishedAt.getTime() - r.startedAt.getTime() : null })),
  };
}
