import { userDeleted } from '@tasksvc/proto';
import { getTableName, is } from 'drizzle-orm';
import { getTableConfig, PgTable } from 'drizzle-orm/pg-core';
import type { Bus, DurableDeclaration, Subscription } from './bus/types.ts';
import { columnName } from './db/orm.ts';
import { inTransaction, type Pool, type PoolClient } from './db/pool.ts';
import type { Logger } from './logger.ts';

/**
 * The user's rows, found from the drizzle schemas themselves: a column is a user column when its name
 * is `user_id` or ends in `_user_id` (and `users.id` is the user). Account deletion deletes by these
 * columns and the export's coverage test lists them, so a table added later with a user column is
 * deleted with the account from its first day, and fails the coverage test until the export says
 * what it does with it (docs/moving.md).
 */
export interface UserTable {
  /** PostgreSQL schema */
  schema: string;
  table: string;
  /** the columns that hold a user's id */
  columns: string[];
  drizzle: PgTable;
}

const USER_COLUMN = /(^|_)user_id$/;

/** The tables of a drizzle schema module (`import * as schema from './db/schema.ts'`) that hold a user's id. */
export function userTables(schemaModule: Record<string, unknown>): UserTable[] {
  const out: UserTable[] = [];
  for (const value of Object.values(schemaModule)) {
    if (!is(value, PgTable)) continue;
    const config = getTableConfig(value);
    const columns = config.columns.map((c) => columnName(c)).filter((name) => USER_COLUMN.test(name) || (config.name === 'users' && name === 'id'));
    if (columns.length > 0) out.push({ schema: config.schema ?? 'public', table: getTableName(value), columns, drizzle: value });
  }
  return out.sort((a, b) => `${a.schema}.${a.table}`.localeCompare(`${b.schema}.${b.table}`));
}

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * Delete every row of the user in these tables and every outbox row about them (an event payload's
 * `userId`), on one transaction's client. Idempotent: a redelivered deletion deletes nothing more.
 * Returns the rows deleted per table.
 */
export async function deleteUserRows(c: PoolClient, tables: UserTable[], outboxSchemas: readonly string[], userId: string): Promise<Record<string, number>> {
  const deleted: Record<string, number> = {};
  // the foreign keys between a service's tables cascade or set null, so any order works
  for (const t of tables) {
    const where = t.columns.map((col) => `${quote(col)} = $1`).join(' OR ');
    const r = await c.query(`DELETE FROM ${quote(t.schema)}.${quote(t.table)} WHERE ${where}`, [userId]);
    deleted[`${t.schema}.${t.table}`] = r.rowCount ?? 0;
  }
  for (const schema of outboxSchemas) {
    // task events, notification requests and the deletion itself all carry the user at the top
    const r = await c.query(`DELETE FROM ${quote(schema)}.outbox WHERE payload->>'userId' = $1`, [userId]);
    deleted[`${schema}.outbox`] = r.rowCount ?? 0;
  }
  return deleted;
}

/** The durable a service's user-deletion consumer registers under (declared in its ServiceDefinition.durables). */
export function userDeletionDurable(service: string): DurableDeclaration {
  return { durable: `${service}-user-deletion`, filter: userDeleted.subject };
}

/**
 * A service's consumer of `events.user.deleted`: deletes the user's rows in the service's own tables
 * and outboxes in one transaction. A failure (the database away) is redelivered by the bus.
 */
export function consumeUserDeletion(deps: { bus: Bus; pool: Pool; log: Logger }, service: string, schemaModule: Record<string, unknown>, outboxSchemas: readonly string[] = []): Promise<Subscription> {
  const tables = userTables(schemaModule);
  return deps.bus.consume(
    userDeleted,
    async ({ userId }) => {
      const deleted = await inTransaction(deps.pool, (c) => deleteUserRows(c, tables, outboxSchemas, userId));
      deps.log.info({ userId, deleted }, `${service}: deleted the user's rows`);
    },
    { durable: userDeletionDurable(service).durable, ackWaitMs: 60_000 },
  );
}
