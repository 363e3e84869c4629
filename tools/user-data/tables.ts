import * as auth from '@tasksvc/auth/db/schema.ts';
import * as gateway from '@tasksvc/gateway/db/schema.ts';
import * as notifier from '@tasksvc/notifier/db/schema.ts';
import { userTables, type Pool, type UserTable } from '@tasksvc/runtime';
import * as scheduler from '@tasksvc/scheduler/db/schema.ts';
import * as tasks from '@tasksvc/tasks/db/schema.ts';
import * as webhook from '@tasksvc/webhook/db/schema.ts';

/**
 * Every service's drizzle schema module (services/<name>/src/db/schema.ts). A service with a schema
 * that is not listed here fails tools/user-data/coverage.test.ts, which compares this list with the
 * folders under services/.
 */
export const SERVICE_SCHEMAS: Record<string, Record<string, unknown>> = { auth, tasks, notifier, webhook, scheduler, gateway };

/** Every table of every service that holds a user's id, derived from the schemas (runtime/src/user-rows.ts). */
export function allUserTables(): UserTable[] {
  return Object.values(SERVICE_SCHEMAS).flatMap((m) => userTables(m));
}

/** How many rows of the user each table holds, by `schema.table`. */
export async function userRowCounts(pool: Pool, userId: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const t of allUserTables()) {
    const where = t.columns.map((c) => `"${c}" = $1`).join(' OR ');
    const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${t.schema}"."${t.table}" WHERE ${where}`, [userId]);
    out[`${t.schema}.${t.table}`] = rows[0]!.n;
  }
  return out;
}
