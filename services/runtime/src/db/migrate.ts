import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type pg from 'pg';
import type { Logger } from '../logger.ts';
import { deadLetterTableSql } from '../dead-letters.ts';
import { outboxTableSql } from '../outbox.ts';

/** All services share this advisory lock class; the second key is the schema's hash. */
const LOCK_CLASS = 7_311;

const SCHEMA_NAME = /^[a-z_][a-z0-9_]*$/;

/**
 * Apply the pending `*.sql` files of one service's schema, in name order, each in its own
 * transaction, under a Postgres advisory lock so replicas starting together take turns. Then make
 * sure the runtime's tables of the service exist: its outboxes (`outboxes`: the schemas whose outbox
 * it owns) and, for a service that consumes events, its dead-letter table (`deadLetters`).
 */
export async function migrate(pool: pg.Pool, opts: { schema: string; dir: string; outboxes?: string[]; deadLetters?: boolean; log: Logger }): Promise<string[]> {
  const { schema, dir, log, outboxes = [] } = opts;
  for (const s of [schema, ...outboxes]) if (!SCHEMA_NAME.test(s)) throw new Error(`bad schema name ${s}`);
  const files = (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
  const client = await pool.connect();
  const applied: string[] = [];
  try {
    await client.query('SELECT pg_advisory_lock($1, hashtext($2))', [LOCK_CLASS, schema]);
    try {
      await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
      await client.query(`CREATE TABLE IF NOT EXISTS "${schema}".schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
      const done = new Set((await client.query<{ name: string }>(`SELECT name FROM "${schema}".schema_migrations`)).rows.map((r) => r.name));
      for (const file of files) {
        if (done.has(file)) continue;
        const sql = await readFile(join(dir, file), 'utf8');
        await client.query('BEGIN');
        try {
          await client.query(`SET LOCAL search_path TO "${schema}", public`);
          await client.query(sql);
          await client.query(`INSERT INTO "${schema}".schema_migrations (name) VALUES ($1)`, [file]);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK');
          throw new Error(`migration ${schema}/${file} failed: ${(err as Error).message}`, { cause: err });
        }
        applied.push(file);
        log.info({ schema, migration: file }, 'migration applied');
      }
      for (const box of outboxes) await client.query(outboxTableSql(box));
      if (opts.deadLetters) await client.query(deadLetterTableSql(schema));
    } finally {
      await client.query('SELECT pg_advisory_unlock($1, hashtext($2))', [LOCK_CLASS, schema]).catch(() => undefined);
    }
  } finally {
    client.release();
  }
  return applied;
}
