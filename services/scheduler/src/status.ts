import type { CronJobsStatus, CronStatus } from '@tasksvc/proto';
import type { Pool } from '@tasksvc/runtime';

/** The job whose runs stand for "cron ran" in GET /api/health (every run dispatches it). */
export const HEALTH_CRON_JOB = 'daily-quest';

/** When the dispatcher last ran: the health figure. */
export async function cronStatus(pool: Pool): Promise<CronStatus> {
  const { rows } = await pool.query<{ last: Date | null }>('SELECT max(started_at) AS last FROM scheduler.cron_runs WHERE job = $1', [HEALTH_CRON_JOB]);
  const last = rows[0]?.last ?? null;
  return { lastRunAt: last ? last.toISOString() : null, minutesSinceLastRun: last ? Math.floor((Date.now() - last.getTime()) / 60_000) : null };
}

/** The health figure plus the latest run of every job, for the admin page. */
export async function cronJobs(pool: Pool): Promise<CronJobsStatus> {
  const { rows } = await pool.query<{ job: string; bucket: Date; status: string; started_at: Date; finished_at: Date | null; notifications: number | null }>(
    `SELECT DISTINCT ON (job) job, bucket, status, started_at, finished_at, (detail ->> 'notifications')::int AS notifications
       FROM scheduler.cron_runs ORDER BY job, bucket DESC`,
  );
  return {
    ...(await cronStatus(pool)),
    jobs: rows.map((r) => ({
      job: r.job,
      bucket: r.bucket.toISOString(),
      status: r.status,
      startedAt: r.started_at.toISOString(),
      finishedAt: r.finished_at?.toISOString() ?? null,
      durationMs: r.finished_at ? r.finished_at.getTime() - r.started_at.getTime() : null,
      notifications: r.notifications,
    })),
  };
}
