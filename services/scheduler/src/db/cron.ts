import type { ReminderDraft } from '@tasksvc/proto';
import { names, orm, selectList, statement, type Queryable } from '@tasksvc/runtime';
import { and, desc, eq, lt, max, sql } from 'drizzle-orm';
import { cronRuns, cronSent } from './schema.ts';

/** A run still "running" after this long died with its process; another call may take it over. */
const STALE_RUN = '10 minutes';
/** cron_runs history kept for health and admin (reference §9). */
const RUNS_RETENTION = '30 days';
/** Sent keys outlive the 30-minute catch-up window and the weekly review's week by far. */
const SENT_RETENTION = '35 days';

/** Whether any job has ever run (a fresh install catches up nothing). */
export async function anyRuns(q: Queryable): Promise<boolean> {
  return (await orm(q).select({ one: sql`1` }).from(cronRuns).limit(1)).length > 0;
}

const p = sql.placeholder;
const claimed = { job: cronRuns.job, bucket: cronRuns.bucket };
const claimStatement = statement(
  sql`INSERT INTO ${cronRuns} (${names(cronRuns.job, cronRuns.bucket)})
        SELECT j, b FROM unnest(${p('jobs')}::text[]) AS j CROSS JOIN unnest(${p('buckets')}::timestamptz[]) AS b
      ON CONFLICT (${names(cronRuns.job, cronRuns.bucket)}) DO UPDATE
        SET ${names(cronRuns.startedAt)} = now(), ${names(cronRuns.finishedAt)} = NULL, ${names(cronRuns.status)} = 'running', ${names(cronRuns.detail)} = NULL
        WHERE ${cronRuns.status} = 'failed' OR (${cronRuns.status} = 'running' AND ${cronRuns.startedAt} < now() - ${STALE_RUN}::interval)
      RETURNING ${selectList(claimed)}`,
  claimed,
);

/**
 * Claim (job, bucket) pairs: the unique key lets exactly one call or replica have each. A failed
 * run, or one left running by a dead process, can be claimed again; the sent keys make that retry
 * skip whatever the first attempt already requested. Returns the claimed pairs as `job@bucket`.
 */
export async function claimRuns(q: Queryable, jobs: readonly string[], buckets: Date[]): Promise<Set<string>> {
  const { rows } = await claimStatement.run(q, { jobs, buckets: buckets.map((b) => b.toISOString()) });
  return new Set(rows.map((r) => `${r.job}@${r.bucket.toISOString()}`));
}

/** Record how a claimed run ended. */
export async function finishRun(q: Queryable, job: string, bucket: Date, status: 'done' | 'failed', detail: Record<string, unknown> | null): Promise<void> {
  await orm(q)
    .update(cronRuns)
    .set({ status, finishedAt: sql`now()`, ...(detail ? { detail } : {}) })
    .where(and(eq(cronRuns.job, job), eq(cronRuns.bucket, bucket)));
}

/** Drop run history and sent keys past their retention. */
export async function pruneRuns(q: Queryable): Promise<void> {
  const db = orm(q);
  await db.delete(cronRuns).where(lt(cronRuns.bucket, sql`now() - ${RUNS_RETENTION}::interval`));
  await db.delete(cronSent).where(lt(cronSent.sentAt, sql`now() - ${SENT_RETENTION}::interval`));
}

const requestStatement = statement(
  sql`WITH d AS (
       SELECT x AS payload, x->>'dedupeKey' AS dedupe_key, (x->>'userId')::uuid AS user_id FROM jsonb_array_elements(${p('drafts')}::jsonb) AS x
     ), fresh AS (
       INSERT INTO ${cronSent} (${names(cronSent.dedupeKey, cronSent.job, cronSent.bucket, cronSent.userId)})
       SELECT dedupe_key, ${p('job')}, ${p('bucket')}, user_id FROM d
       ON CONFLICT (${names(cronSent.dedupeKey)}) DO NOTHING
       RETURNING ${cronSent.dedupeKey} AS dedupe_key
     )
     INSERT INTO scheduler.outbox (id, subject, payload)
     SELECT gen_random_uuid(), ${p('subject')}, d.payload FROM d JOIN fresh USING (dedupe_key)`,
);

/**
 * Record drafts and enqueue their notification requests (outbox rows of `subject`) in one
 * statement: only drafts whose dedupe key is new get an outbox row. Returns how many were new. The
 * page travels as one JSON document (`jsonb_array_elements`), each element becoming its outbox
 * payload as it is: three parallel arrays of text, uuid and jsonb cost the driver an escape of every
 * element and PostgreSQL an array parse of each.
 */
export async function requestNotifications(q: Queryable, job: string, bucket: Date, drafts: ReminderDraft[], subject: string): Promise<number> {
  if (drafts.length === 0) return 0;
  const { rowCount } = await requestStatement.run(q, { drafts: JSON.stringify(drafts), job, bucket: bucket.toISOString(), subject });
  return rowCount;
}

/** When `job` last started (the health figure). */
export async function lastStarted(q: Queryable, job: string): Promise<Date | null> {
  const [row] = await orm(q)
    .select({ last: max(cronRuns.startedAt) })
    .from(cronRuns)
    .where(eq(cronRuns.job, job));
  return row?.last ?? null;
}

/** The latest run of every job, with the notifications it requested. */
export async function latestRuns(q: Queryable) {
  return orm(q)
    .selectDistinctOn([cronRuns.job], {
      job: cronRuns.job,
      bucket: cronRuns.bucket,
      status: cronRuns.status,
      startedAt: cronRuns.startedAt,
      finishedAt: cronRuns.finishedAt,
      notifications: sql<number | null>`(${cronRuns.detail} ->> 'notifications')::int`,
    })
    .from(cronRuns)
    .orderBy(cronRuns.job, desc(cronRuns.bucket));
}
