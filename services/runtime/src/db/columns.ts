import { sql, type SQL } from 'drizzle-orm';

/**
 * Helpers for the services' `src/db/schema.ts` files. Only drizzle-orm is imported here, so
 * drizzle-kit loads a schema without the rest of the runtime.
 */

/** A CHECK that `column` holds one of `values` (the list a contract already names, e.g. proto's enum values). */
export function oneOf(column: string, values: readonly string[]): SQL {
  return sql.raw(`${column} IN (${values.map((v) => `'${v.replaceAll("'", "''")}'`).join(', ')})`);
}
