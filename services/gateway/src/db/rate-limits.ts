import { names, orm, statement, type Queryable } from '@tasksvc/runtime';
import { lt, sql } from 'drizzle-orm';
import { rateLimits as r } from './schema.ts';

const p = sql.placeholder;

/** One call counted in the current one-minute window (one upsert): the window's hits so far and its seconds left. */
const countStatement = statement<{ hits: number; reset_in: number }>(
  sql`INSERT INTO ${r} (${names(r.userId, r.bucket, r.windowStart, r.hits)}) VALUES (${p('userId')}, ${p('bucket')}, date_trunc('minute', now()), 1)
      ON CONFLICT (${names(r.userId, r.bucket, r.windowStart)}) DO UPDATE SET hits = ${r.hits} + 1
      RETURNING ${r.hits} AS hits, ceil(extract(epoch FROM ${r.windowStart} + interval '1 minute' - now()))::int AS reset_in`,
);

export async function countCall(q: Queryable, userId: string, bucket: string): Promise<{ hits: number; resetIn: number } | undefined> {
  const row = (await countStatement.run(q, { userId, bucket })).rows[0];
  return row && { hits: row.hits, resetIn: row.reset_in };
}

/** Windows that ended more than a minute ago. */
export async function dropOldWindows(q: Queryable): Promise<void> {
  await orm(q).delete(r).where(lt(r.windowStart, sql`now() - interval '2 minutes'`));
}
