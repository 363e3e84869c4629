import { orm, type Queryable } from '@tasksvc/runtime';
import { and, countDistinct, eq, exists, isNotNull, or, sql } from 'drizzle-orm';
import { accounts, authenticators, totpCredentials, users } from './schema.ts';

export interface UserStats {
  total: number;
  new7d: number;
  new30d: number;
  active7d: number;
  active30d: number;
  byProvider: { provider: string; users: number }[];
  withSecondFactor: number;
}

const countWhere = (cond: ReturnType<typeof sql>) => sql<number>`count(*) FILTER (WHERE ${cond})::int`;

/** Counts only; no row of any user leaves this function. */
export async function userStats(q: Queryable): Promise<UserStats> {
  const db = orm(q);
  const withSecondFactor = or(
    exists(db.select({ one: sql`1` }).from(totpCredentials).where(and(eq(totpCredentials.userId, users.id), isNotNull(totpCredentials.enabledAt)))),
    exists(db.select({ one: sql`1` }).from(authenticators).where(eq(authenticators.userId, users.id))),
  )!;
  const [totals, byProvider] = await Promise.all([
    db
      .select({
        total: sql<number>`count(*)::int`,
        new7d: countWhere(sql`${users.createdAt} > now() - interval '7 days'`),
        new30d: countWhere(sql`${users.createdAt} > now() - interval '30 days'`),
        active7d: countWhere(sql`${users.lastActiveAt} > now() - interval '7 days'`),
        active30d: countWhere(sql`${users.lastActiveAt} > now() - interval '30 days'`),
        withSecondFactor: countWhere(withSecondFactor),
      })
      .from(users),
    db.select({ provider: accounts.provider, users: countDistinct(accounts.userId) }).from(accounts).groupBy(accounts.provider).orderBy(accounts.provider),
  ]);
  return { ...totals[0]!, byProvider };
}
