import { names, orm, statement, type Queryable } from '@tasksvc/runtime';
import { and, lt, or, sql } from 'drizzle-orm';
import { rateLimits as r } from './schema.ts';

const p = sql.placeholder;

/** Buckets counted per hour rather than per minute carry this prefix (so the cleanup can tell them apart). */
export const HOURLY = 'hour:';

/** A call counted in the current window, a minute or (for `hour:` buckets) an hour (one upsert): the window's hits so far and its seconds left. */
const countStatements = {
  minute: countIn('minute'),
  hour: countIn('hour'),
};
function countIn(unit: 'minute' | 'hour') {
  return statement<{ hits: number; reset_in: number }>(
    sql`INSERT INTO ${r} (${names(r.userId, r.bucket, r.windowStart, r.hits)}) VALUES (${p('userId')}, ${p('bucket')}, date_trunc(${sql.raw(`'${unit}'`)}, now()), ${p('count')})
      ON CONFLICT (${names(r.userId, r.bucket, r.windowStart)}) DO UPDATE SET hits = ${r.hits} + EXCLUDED.hits
      RETURNING ${r.hits} AS hits, ceil(extract(epoch FROM ${r.windowStart} + interval ${sql.raw(`'1 ${unit}'`)} - now()))::int AS reset_in`,
  );
}

/** Count `count` (1 for a call; a bulk action's tasks) against the bucket's current window. */
export async function countCall(q: Queryable, userId: string, bucket: string, count = 1): Promise<{ hits: number; resetIn: number } | undefined> {
  const row = (await countStatements[bucket.startsWith(HOURLY) ? 'hour' : 'minute'].run(q, { userId, bucket, count })).rows[0];
  return row && { hits: row.hits, resetIn: row.reset_in };
}

/** Windows that ended more than a minute ago (an hourly one: more than an hour ago). */
export async function dropOldWindows(q: Queryable): Promise<void> {
  await orm(q)
    .delete(r)
    .where(and(lt(r.windowStart, sql`now() - interval '2 minutes'`), or(sql`${r.bucket} NOT LIKE ${`${HOURLY}%`}`, lt(r.windowStart, sql`now() - interval '2 hours'`))));
}
