import { collectRemindersRpc, CRON_BUCKET_MS, CRON_JOBS, cronBucketStart, notificationRequested, type CronJob, type CronJobRun, type CronRunSummary, type ReminderDraft } from '@tasksvc/proto';
import type { Bus, Logger, OutboxRelay, Pool } from '@tasksvc/runtime';
import { cronMetrics } from './metrics.ts';

/** A missed bucket is caught up when the cron returns within this many buckets (30 minutes). */
export const CATCH_UP_BUCKETS = 6;
/** A run still "running" after this long died with its process; another call may take it over. */
const STALE_RUN = '10 minutes';
/** Users per collectReminders page (the tasks service cuts a page shorter when its drafts grow large, to stay under NATS's 1 MB message limit). */
export const PAGE_SIZE = 2_000;
const COLLECT_TIMEOUT_MS = 60_000;
/** cron_runs history kept for health and admin (reference §9). */
const RUNS_RETENTION = '30 days';

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
  const { rows } = await pool.query<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM scheduler.cron_runs) AS any');
  const n = rows[0]?.any ? CATCH_UP_BUCKETS : 1;
  return Array.from({ length: n }, (_, i) => new Date(current - (n - 1 - i) * CRON_BUCKET_MS));
}

/**
 * Claim (job, bucket) pairs in Postgres: the unique key lets exactly one call or replica have each.
 * A failed run, or one left running by a dead process, can be claimed again; the sent keys make
 * that retry skip whatever the first attempt already requested.
 */
async function claim(pool: Pool, jobs: readonly string[], buckets: Date[]): Promise<Set<string>> {
  const { rows } = await pool.query<{ job: string; bucket: Date }>(
    `INSERT INTO scheduler.cron_runs (job, bucket)
       SELECT j, b FROM unnest($1::text[]) AS j CROSS JOIN unnest($2::timestamptz[]) AS b
     ON CONFLICT (job, bucket) DO UPDATE SET started_at = now(), finished_at = NULL, status = 'running', detail = NULL
       WHERE cron_runs.status = 'failed' OR (cron_runs.status = 'running' AND cron_runs.started_at < now() - interval '${STALE_RUN}')
     RETURNING job, bucket`,
    [jobs, buckets.map((b) => b.toISOString())],
  );
  return new Set(rows.map((r) => `${r.job}@${r.bucket.toISOString()}`));
}

/**
 * Record drafts and enqueue their notification requests in one statement: only drafts whose dedupe
 * key is new get an outbox row. Returns how many were new. The page travels as one JSON document
 * (`jsonb_array_elements`), each element becoming its outbox payload as it is: three parallel
 * arrays of text, uuid and jsonb cost the driver an escape of every element and PostgreSQL an array
 * parse of each.
 */
export async function requestNotifications(pool: Pool, job: string, bucket: Date, drafts: ReminderDraft[]): Promise<number> {
  if (drafts.length === 0) return 0;
  const { rowCount } = await pool.query(
    `WITH d AS (
       SELECT x AS payload, x->>'dedupeKey' AS dedupe_key, (x->>'userId')::uuid AS user_id FROM jsonb_array_elements($1::jsonb) AS x
     ), fresh AS (
       INSERT INTO scheduler.cron_sent (dedupe_key, job, bucket, user_id)
       SELECT dedupe_key, $2, $3, user_id FROM d
       ON CONFLICT (dedupe_key) DO NOTHING
       RETURNING dedupe_key
     )
     INSERT INTO scheduler.outbox (id, subject, payload)
     SELECT gen_random_uuid(), $4, d.payload FROM d JOIN fresh USING (dedupe_key)`,
    [JSON.stringify(drafts), job, bucket.toISOString(), notificationRequested.subject],
  );
  return rowCount ?? 0;
}

async function runJob(deps: DispatchDeps, job: CronJob, bucket: Date): Promise<{ users: number; notifications: number }> {
  let after: string | null = null;
  let users = 0;
  let notifications = 0;
  do {
    const page: { users: number; drafts: ReminderDraft[]; next: string | null } = await deps.bus.request(collectRemindersRpc, { job, bucketStart: bucket.toISOString(), after, limit: PAGE_SIZE }, { timeoutMs: COLLECT_TIMEOUT_MS });
    users += page.users;
    if (page.drafts.length) {
      notifications += await requestNotifications(deps.pool, job, bucket, page.drafts);
      deps.relay.kick();
    }
    after = page.next;
  } while (after);
  return { users, notifications };
}

/** Daily housekeeping, claimed like a job so one replica does it. */
async function cleanup(deps: DispatchDeps, now: Date): Promise<void> {
  const day = new Date(Math.floor(now.getTime() / 86_400_000) * 86_400_000);
  const claimed = await claim(deps.pool, ['cleanup'], [day]);
  if (claimed.size === 0) return;
  await deps.pool.query(`DELETE FROM scheduler.cron_runs WHERE bucket < now() - interval '${RUNS_RETENTION}'`);
  // Sent keys outlive the 30-minute catch-up window and the weekly review's week by far.
  await deps.pool.query(`DELETE FROM scheduler.cron_sent WHERE sent_at < now() - interval '35 days'`);
  await deps.pool.query(`UPDATE scheduler.cron_runs SET status = 'done', finished_at = now() WHERE job = 'cleanup' AND bucket = $1`, [day.toISOString()]);
}

/** Run one claimed (job, bucket) and record how it ended. */
async function runClaimed(deps: DispatchDeps, job: CronJob, bucket: Date): Promise<CronJobRun> {
  const t0 = performance.now();
  try {
    const r = await runJob(deps, job, bucket);
    await deps.pool.query(`UPDATE scheduler.cron_runs SET status = 'done', finished_at = now(), detail = $3 WHERE job = $1 AND bucket = $2`, [job, bucket.toISOString(), r]);
    cronMetrics.jobRan(job, 'ok', (performance.now() - t0) / 1000, r.notifications);
    return { job, bucket: bucket.toISOString(), status: 'ran', ...r };
  } catch (err) {
    cronMetrics.jobRan(job, 'failed', (performance.now() - t0) / 1000, 0);
    const message = (err as Error).message ?? String(err);
    deps.log.warn({ job, bucket: bucket.toISOString(), err: message }, 'cron job failed; the next call retries it');
    await deps.pool
      .query(`UPDATE scheduler.cron_runs SET status = 'failed', finished_at = now(), detail = $3 WHERE job = $1 AND bucket = $2`, [job, bucket.toISOString(), { error: message }])
      .catch(() => undefined);
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
  const claimed = await claim(deps.pool, CRON_JOBS, buckets);
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
