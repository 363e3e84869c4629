import { sql, type SQL } from 'drizzle-orm';
import { customType } from 'drizzle-orm/pg-core';

/**
 * Helpers for the services' `src/db/schema.ts` files. Only drizzle-orm is imported here, so
 * drizzle-kit loads a schema without the rest of the runtime.
 */

/** A CHECK that `column` holds one of `values` (the list a contract already names, e.g. proto's enum values). */
export function oneOf(column: string, values: readonly string[]): SQL {
  return sql.raw(`${column} IN (${values.map((v) => `'${v.replaceAll("'", "''")}'`).join(', ')})`);
}

/** Binary data (`bytea`) as a Buffer. */
export const bytea = customType<{ data: Buffer; driverData: Buffer }>({ dataType: () => 'bytea' });

/**
 * A wall-clock time of day (`time`) as the API shows it, `HH:MM` (PostgreSQL sends `HH:MM:SS`). Its
 * default is written as PostgreSQL prints it (`'09:00:00'`).
 */
export const timeOfDay = customType<{ data: string; driverData: string }>({
  dataType: () => 'time',
  fromDriver: (v) => v.slice(0, 5),
});
