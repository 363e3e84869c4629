import { CRON_JOBS, type CronFigures } from '@tasksvc/proto';
import { countSamples, counter, histogram, sum } from '@tasksvc/runtime';

const calls = histogram('tasksvc_cron_dispatch_duration_seconds', 'Cron calls (POST /api/cron, the embedded timer) dispatched by this scheduler, by outcome (ok, failed: some job failed).', ['outcome']);
// `cron_job`, not `job`: Prometheus gives every scraped series a `job` label of its own.
const runs = histogram('tasksvc_cron_job_duration_seconds', 'Cron job runs (one job for one 5-minute bucket) claimed by this scheduler, by cron_job and outcome (ok, failed).', ['cron_job', 'outcome']);
const notifications = counter('tasksvc_cron_notifications_total', 'Notification requests a cron job queued (new ones only; repeats are deduplicated), by cron_job.', ['cron_job']);
// Each series exists from the start at 0, so rate() and increase() count the first event of the
// process's life too (a series that first appears at 1 shows no increase).
/** The seven notification jobs, and the daily housekeeping (claimed and timed like one, queues nothing). */
export const TIMED_JOBS = [...CRON_JOBS, 'cleanup'] as const;
for (const outcome of ['ok', 'failed']) {
  calls.zero({ outcome });
  for (const job of TIMED_JOBS) runs.zero({ cron_job: job, outcome });
}
for (const job of TIMED_JOBS) notifications.inc({ cron_job: job }, 0);

/** Cron metrics (docs/observability.md); a job already run by another call or replica is not counted. */
export const cronMetrics = {
  dispatched(ok: boolean, seconds: number): void {
    calls.observe({ outcome: ok ? 'ok' : 'failed' }, seconds);
  },
  jobRan(job: (typeof TIMED_JOBS)[number], outcome: 'ok' | 'failed', seconds: number, queued: number): void {
    runs.observe({ cron_job: job, outcome }, seconds);
    notifications.inc({ cron_job: job }, queued);
  },
  /** the admin page's part, from the same histograms and counter */
  async figures(): Promise<CronFigures> {
    const [called, ran, queued] = await Promise.all([countSamples(calls), countSamples(runs), countSamples(notifications)]);
    const jobs = [...new Set(ran.map((s) => String(s.labels.cron_job)))].sort();
    return {
      calls: sum(called),
      failedCalls: sum(called, (l) => l.outcome === 'failed'),
      jobs: jobs.map((job) => ({
        job,
        runs: sum(ran, (l) => l.cron_job === job),
        failed: sum(ran, (l) => l.cron_job === job && l.outcome === 'failed'),
        notifications: sum(queued, (l) => l.cron_job === job),
      })),
    };
  },
};

const reminderDelay = histogram(
  'tasksvc_reminder_delay_seconds',
  'Reminders sent by this scheduler, by how long after their time they were handed to the notifier.',
  [],
  [1, 5, 15, 30, 60, 120, 600, 3600],
);
const remindersDropped = counter('tasksvc_reminders_dropped_total', 'Due reminders not sent, by reason (deleted, completed, removed, paused, vacation).', ['reason']);
for (const reason of ['deleted', 'completed', 'removed', 'paused', 'vacation']) remindersDropped.inc({ reason }, 0);

/** Reminder metrics (docs/observability.md). */
export const reminderMetrics = {
  sent(delaySeconds: number): void {
    reminderDelay.observe({}, delaySeconds);
  },
  dropped(reason: string): void {
    remindersDropped.inc({ reason });
  },
};
