import { collectRemindersRpc, CRON_BUCKET_MS, CRON_JOBS, cronBucketStart, notificationRequested, type CronJob, type CronJobRun, type CronRunSummary, type ReminderDraft } from '@tasksvc/proto';
import type { Bus, Logger, OutboxRelay, Pool } from '@tasksvc/runtime';
import { anyRuns, claimRuns, finishRun, pruneRuns, requestNotifications } from './db/cron.ts';
import { cronMetrics } from './metrics.ts';

/** A missed bucket is caught up when the cron returns within this many buckets (30 minutes). */
export const CATCH_UP_BUCKETS = 6;
/** Users per collectReminders page (the tasks service cuts a page shorter when its drafts grow large, to stay under NATS's 1 MB message limit). */
export const PAGE_SIZE = 2_000;
const COLLECT_TIMEOUT_MS = 60_000;

export interface DispatchDeps {
  pool: Pool;
  bus: Bus;
  log: Logger;
  relay: OutboxRelay;
}

/**
 * Buckets this call may run: the current one, plus the previous ones of the last 30 minutes once
 * the dispatcher has run before (a fresh install starts with the current bucket, not a backlog).
 * Buckets already done are filtered out by the claim.
 */
async function candidateBuckets(pool: Pool, now: Date): Promise<Date[]> {
  const current = cronBucketStart(now).getTime();
  const n = (await anyRuns(pool)) ? CATCH_UP_BUCKETS : 1;
  return Array.from({ length: n }, (_, i) => new Date(current - (n - 1 - i) * CRON_BUCKET_MS));
}

async function runJob(deps: DispatchDeps, job: CronJob, bucket: Date): Promise<{ users: number; notifications: number }> {
  let after: string | null = null;
  let users = 0;
  let notifications = 0;
  do {
    const page: { users: number; drafts: ReminderDraft[]; next: string | null } = await deps.bus.request(collectRemindersRpc, { job, bucketStart: bucket.toISOString(), after, limit: PAGE_SIZE }, { timeoutMs: COLLECT_TIMEOUT_MS });
    users += page.users;
    if (page.drafts.length) {
      notifications += await requestNotifications(deps.pool, job, bucket, page.drafts, notificationRequested.subject);
      deps.relay.kick();
    }
    after = page.next;
  } while (after);
  return { users, notifications };
}

/** Daily housekeeping, claimed like a job so one replica does it. */
async function cleanup(deps: DispatchDeps, now: Date): Promise<void> {
  const day = new Date(Math.floor(now.getTime() / 86_400_000) * 86_400_000);
  const claimed = await claimRuns(deps.pool, ['cleanup'], [day]);
  if (claimed.size === 0) return;
  const t0 = performance.now();
  try {
    await pruneRuns(deps.pool);
    await finishRun(deps.pool, 'cleanup', day, 'done', null);
    cronMetrics.jobRan('cleanup', 'ok', (performance.now() - t0) / 1000, 0);
  } catch (err) {
    cronMetrics.jobRan('cleanup', 'failed', (performance.now() - t0) / 1000, 0);
    // recorded as failed, so a later call of the day claims it again (as a failed job is)
    await finishRun(deps.pool, 'cleanup', day, 'failed', { error: (err as Error).message ?? String(err) }).catch(() => undefined);
    throw err;
  }
}

/** Run one claimed (job, bucket) and record how it ended. */
async function runClaimed(deps: DispatchDeps, job: CronJob, bucket: Date): Promise<CronJobRun> {
  const t0 = performance.now();
  try {
    const r = await runJob(deps, job, bucket);
    await finishRun(deps.pool, job, bucket, 'done', r);
    cronMetrics.jobRan(job, 'ok', (performance.now() - t0) / 1000, r.notifications);
    return { job, bucket: bucket.toISOString(), status: 'ran', ...r };
  } catch (err) {
    cronMetrics.jobRan(job, 'failed', (performance.now() - t0) / 1000, 0);
    const message = (err as Error).message ?? String(err);
    deps.log.warn({ job, bucket: bucket.toISOString(), err: message }, 'cron job failed; the next call retries it');
    await finishRun(deps.pool, job, bucket, 'failed', { error: message }).catch(() => undefined);
    return { job, bucket: bucket.toISOString(), status: 'failed', users: 0, notifications: 0, error: message };
  }
}

/**
 * One cron call: for each bucket (oldest first), the seven jobs, each for the users whose
 * configured local time falls in that bucket. The jobs of a bucket run concurrently: they are
 * independent (own claim, own sent keys; the morning briefing's users are excluded from the jobs it
 * replaces by the collection query itself), and a bucket of real users is a few hundred users per
 * job, so one after another the call was the sum of seven query latencies. The summary keeps the
 * reference's order.
 */
export async function dispatchCron(deps: DispatchDeps, now: Date): Promise<CronRunSummary> {
  const started = Date.now();
  const buckets = await candidateBuckets(deps.pool, now);
  const claimed = await claimRuns(deps.pool, CRON_JOBS, buckets);
  const current = buckets[buckets.length - 1]!;
  const jobs: CronJobRun[] = [];
  for (const bucket of buckets) {
    const runs = await Promise.all(
      CRON_JOBS.map(async (job): Promise<CronJobRun | null> => {
        if (claimed.has(`${job}@${bucket.toISOString()}`)) return runClaimed(deps, job, bucket);
        return bucket === current ? { job, bucket: bucket.toISOString(), status: 'skipped', users: 0, notifications: 0 } : null;
      }),
    );
    for (const r of runs) if (r) jobs.push(r);
  }
  const ok = jobs.every((j) => j.status !== 'failed');
  await cleanup(deps, now).catch((err: unknown) => deps.log.warn({ err: (err as Error).message }, 'cron cleanup failed'));
  const durationMs = Date.now() - started;
  cronMetrics.dispatched(ok, durationMs / 1000);
  return { ok, ranAt: now.toISOString(), buckets: buckets.map((b) => b.toISOString()), jobs, durationMs };
}
