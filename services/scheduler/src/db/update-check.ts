import { orm, type Queryable } from '@tasksvc/runtime';
import { and, eq, isNull, lt, lte, or, sql } from 'drizzle-orm';
import { updateCheck } from './schema.ts';

const one = eq(updateCheck.id, 1);

/** Take the shared check for `lease` (an interval) when it is due and nobody holds it; true when this caller has it. */
export async function leaseUpdateCheck(q: Queryable, lease: string): Promise<boolean> {
  const rows = await orm(q)
    .update(updateCheck)
    .set({ leaseUntil: sql`now() + ${lease}::interval` })
    .where(and(one, lte(updateCheck.nextCheckAt, sql`now()`), or(isNull(updateCheck.leaseUntil), lt(updateCheck.leaseUntil, sql`now()`))))
    .returning({ id: updateCheck.id });
  return rows.length > 0;
}

/** Record a check's outcome (a failure keeps the last known version) and when the next one is due. */
export async function recordUpdateCheck(q: Queryable, outcome: { latest: string | null; error: string | null }, next: { success: string; failure: string }): Promise<void> {
  const ok = outcome.error === null;
  await orm(q)
    .update(updateCheck)
    .set({
      ok,
      latestVersion: sql`COALESCE(${outcome.latest}, ${updateCheck.latestVersion})`,
      error: outcome.error,
      checkedAt: sql`now()`,
      leaseUntil: null,
      nextCheckAt: sql`now() + ${ok ? next.success : next.failure}::interval`,
    })
    .where(one);
}

/** The state the admin page shows. */
export async function readUpdateCheck(q: Queryable) {
  const [row] = await orm(q)
    .select({ ok: updateCheck.ok, latestVersion: updateCheck.latestVersion, error: updateCheck.error, checkedAt: updateCheck.checkedAt })
    .from(updateCheck)
    .where(one);
  return row ?? null;
}
