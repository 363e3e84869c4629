import { orm, type Queryable } from '@tasksvc/runtime';
import { and, desc, eq, lte, sql } from 'drizzle-orm';
import type { Energy } from '../game/domain/quest.ts';
import { energyCheckins } from './schema.ts';

/** The user's check-ins up to `today`, newest first (a month at most). */
export async function recentCheckins(q: Queryable, userId: string, today: string): Promise<{ date: string; level: Energy }[]> {
  return orm(q)
    .select({ date: energyCheckins.localDate, level: energyCheckins.level })
    .from(energyCheckins)
    .where(and(eq(energyCheckins.userId, userId), lte(energyCheckins.localDate, today)))
    .orderBy(desc(energyCheckins.localDate))
    .limit(31);
}

/** One check-in per local day: the latest wins. */
export async function checkIn(q: Queryable, userId: string, localDate: string, level: Energy): Promise<void> {
  await orm(q)
    .insert(energyCheckins)
    .values({ userId, localDate, level })
    .onConflictDoUpdate({ target: [energyCheckins.userId, energyCheckins.localDate], set: { level, createdAt: sql`now()` } });
}
