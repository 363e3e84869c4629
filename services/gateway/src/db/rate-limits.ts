import { createBatcher, names, orm, statement, type Batcher, type Queryable } from '@tasksvc/runtime';
import { and, lt, or, sql } from 'drizzle-orm';
import { rateLimits as r } from './schema.ts';

const p = sql.placeholder;

/** Buckets counted per hour rather than per minute carry this prefix (so the cleanup can tell them apart). */
export const HOURLY = 'hour:';

export interface Counted {
  /** the window's hits so far, this call's included */
  hits: number;
  /** seconds to the window's end */
  resetIn: number;
  /** the window's end (ms since the epoch, PostgreSQL's clock) */
  windowEnd: number;
}

interface Count {
  userId: string;
  bucket: string;
  count: number;
}

/**
 * Counts (user, bucket, n) in their current windows, a minute or (for `hour:` buckets) an hour, as
 * one upsert for any number of them; a pair appears once (an upsert cannot touch a row twice).
 * Rows in key order, so two replicas' statements lock shared rows in the same order.
 */
const countMany = statement<{ user_id: string; bucket: string; hits: number; window_end: number; reset_in: number }>(
  sql`WITH c AS (
      SELECT u, b, n, CASE WHEN starts_with(b, ${sql.raw(`'${HOURLY}'`)}) THEN 'hour' ELSE 'minute' END AS unit
      FROM unnest(${p('users')}::uuid[], ${p('buckets')}::text[], ${p('counts')}::int[]) AS t(u, b, n)
    )
    INSERT INTO ${r} (${names(r.userId, r.bucket, r.windowStart, r.hits)})
    SELECT u, b, date_trunc(unit, now()), n FROM c ORDER BY u, b
    ON CONFLICT (${names(r.userId, r.bucket, r.windowStart)}) DO UPDATE SET hits = ${r.hits} + EXCLUDED.hits
    RETURNING ${r.userId} AS user_id, ${r.bucket} AS bucket, ${r.hits} AS hits,
      (extract(epoch FROM ${r.windowStart} + CASE WHEN starts_with(${r.bucket}, ${sql.raw(`'${HOURLY}'`)}) THEN interval '1 hour' ELSE interval '1 minute' END) * 1000)::float8 AS window_end,
      ceil(extract(epoch FROM ${r.windowStart} + CASE WHEN starts_with(${r.bucket}, ${sql.raw(`'${HOURLY}'`)}) THEN interval '1 hour' ELSE interval '1 minute' END - now()))::int AS reset_in`,
);

/**
 * One statement for the counts that arrived together. Each call's hits are the window's total as
 * the calls before it in the batch left it (the same as if each had run its own upsert in that order).
 */
async function flushCounts(q: Queryable, items: Count[]): Promise<Counted[]> {
  const sums = new Map<string, { userId: string; bucket: string; n: number }>();
  const keyOf = (userId: string, bucket: string) => `${userId}\u0000${bucket}`;
  for (const c of items) {
    const k = keyOf(c.userId, c.bucket);
    const s = sums.get(k);
    if (s) s.n += c.count;
    else sums.set(k, { userId: c.userId, bucket: c.bucket, n: c.count });
  }
  const rows = [...sums.values()];
  const { rows: counted } = await countMany.run(q, { users: rows.map((s) => s.userId), buckets: rows.map((s) => s.bucket), counts: rows.map((s) => s.n) });
  // the total before this batch, then each call in order adds its own
  const running = new Map<string, Counted>();
  for (const row of counted) running.set(keyOf(row.user_id, row.bucket), { hits: row.hits - sums.get(keyOf(row.user_id, row.bucket))!.n, resetIn: row.reset_in, windowEnd: row.window_end });
  return items.map((c) => {
    const t = running.get(keyOf(c.userId, c.bucket))!;
    t.hits += c.count;
    return { ...t };
  });
}

const batchers = new WeakMap<Queryable, Batcher<Count, Counted>>();

/**
 * Count `count` (1 for a call; a bulk action's tasks) against the bucket's current window. The counts
 * of concurrent calls share one statement (a call alone runs at once; while one statement runs, the
 * calls that arrive meanwhile wait and go together in the next): the counter stays in PostgreSQL,
 * exact and shared by every replica, but under load costs a fraction of an upsert and commit per write
 * (issue 61: an upsert per create was about as much CPU as the rest of the create).
 */
export async function countCall(q: Queryable, userId: string, bucket: string, count = 1): Promise<Counted> {
  let b = batchers.get(q);
  if (!b) batchers.set(q, (b = createBatcher((items: Count[]) => flushCounts(q, items), 512)));
  return b.add({ userId, bucket, count });
}

/** Windows that ended more than a minute ago (an hourly one: more than an hour ago). */
export async function dropOldWindows(q: Queryable): Promise<void> {
  await orm(q)
    .delete(r)
    .where(and(lt(r.windowStart, sql`now() - interval '2 minutes'`), or(sql`${r.bucket} NOT LIKE ${`${HOURLY}%`}`, lt(r.windowStart, sql`now() - interval '2 hours'`))));
}
