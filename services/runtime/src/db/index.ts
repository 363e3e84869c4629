export { afterCommit, createPool, inTransaction, type Pool, type PoolClient } from './pool.ts';
export { migrate } from './migrate.ts';
export { databaseUnavailable, waitForDatabase } from './availability.ts';
export { startLocalPostgres, createDatabase, type LocalPostgres, type LocalPostgresOptions } from './local-postgres.ts';
export { freePort } from '../ports.ts';
export { orm, columnName, jsonStatement, jsonView, names, selectList, statement, Statement, StatementCache, CASING, type Db, type Field, type Fields, type JsonView, type Queryable, type RowOf } from './orm.ts';
