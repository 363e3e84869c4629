import pg from 'pg';
import type { Logger } from '../logger.ts';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;

/**
 * A connection pool that survives the database going away: idle-client errors are logged instead
 * of crashing the process, and new connections are attempted on the next query.
 */
export function createPool(url: string, log: Logger, opts: { max?: number; application?: string; connectTimeoutMs?: number } = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.max ?? 10,
    connectionTimeoutMillis: opts.connectTimeoutMs ?? 5_000,
    idleTimeoutMillis: 30_000,
    application_name: opts.application ?? 'task-service',
  });
  pool.on('error', (err) => log.warn({ err: err.message }, 'idle database connection lost'));
  // pg-pool listens for errors only on idle clients; a checked-out client whose server goes away
  // (e.g. held across a bus publish) would otherwise emit an unhandled 'error' and kill the process.
  // Its pending query still rejects, and the pool discards the broken client on release.
  pool.on('connect', (client) => {
    client.on('error', (err) => log.warn({ err: err.message }, 'database connection lost while in use'));
  });
  return pool;
}

/** Run `fn` in a transaction; rolls back on any throw. */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
