export { createPool, inTransaction, type Pool, type PoolClient } from './pool.ts';
export { migrate } from './migrate.ts';
export { startLocalPostgres, createDatabase, freePort, type LocalPostgres } from './local-postgres.ts';
