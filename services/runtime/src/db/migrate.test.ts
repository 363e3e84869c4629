import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quietLogger, testDatabase } from '../../../../tools/testenv/index.ts';
import { migrate } from './migrate.ts';
import { createPool, type Pool } from './pool.ts';

const log = quietLogger();

function migrationsDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'migrations-'));
  for (const [name, sql] of Object.entries(files)) writeFileSync(join(dir, name), sql);
  return dir;
}

describe('migrations', () => {
  let url: string;
  const pools: Pool[] = [];
  const pool = () => {
    const p = createPool(url, log, { max: 2 });
    pools.push(p);
    return p;
  };
  beforeAll(async () => {
    url = await testDatabase();
  });
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.end()));
  });

  it('applies each file once, in order, into the service schema', async () => {
    const dir = migrationsDir({
      '0002_more.sql': 'ALTER TABLE items ADD COLUMN note text;',
      '0001_init.sql': 'CREATE TABLE items (id serial PRIMARY KEY, name text NOT NULL);',
    });
    const p = pool();
    expect(await migrate(p, { schema: 'alpha', dir, log })).toEqual(['0001_init.sql', '0002_more.sql']);
    expect(await migrate(p, { schema: 'alpha', dir, log })).toEqual([]);
    const cols = await p.query(`SELECT column_name FROM information_schema.columns WHERE table_schema = 'alpha' AND table_name = 'items' ORDER BY ordinal_position`);
    expect(cols.rows.map((r) => r.column_name)).toEqual(['id', 'name', 'note']);
  });

  it('lets many replicas start at once against a fresh database: each migration runs exactly once', async () => {
    const dir = migrationsDir({
      '0001_a.sql': 'CREATE TABLE counter (n int); INSERT INTO counter VALUES (1);',
      '0002_b.sql': 'UPDATE counter SET n = n + 1; SELECT pg_sleep(0.2);',
      '0003_c.sql': 'UPDATE counter SET n = n + 1;',
    });
    const results = await Promise.all(Array.from({ length: 6 }, () => migrate(pool(), { schema: 'beta', dir, log })));
    expect(results.flat().sort()).toEqual(['0001_a.sql', '0002_b.sql', '0003_c.sql']);
    const { rows } = await pool().query('SELECT n FROM beta.counter');
    expect(rows).toEqual([{ n: 3 }]);
  });

  it('rolls back a failing migration completely and names it', async () => {
    const dir = migrationsDir({
      '0001_ok.sql': 'CREATE TABLE t (id int);',
      '0002_bad.sql': 'CREATE TABLE half (id int); SELECT * FROM no_such_table;',
    });
    const p = pool();
    await expect(migrate(p, { schema: 'gamma', dir, log })).rejects.toThrow(/gamma\/0002_bad\.sql/);
    const tables = await p.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = 'gamma' ORDER BY 1`);
    expect(tables.rows.map((r) => r.table_name)).toEqual(['schema_migrations', 't']);
    const applied = await p.query('SELECT name FROM gamma.schema_migrations');
    expect(applied.rows.map((r) => r.name)).toEqual(['0001_ok.sql']);
  });

  it('creates the outbox tables a service names, once, and keeps one an earlier migration created', async () => {
    const columns = async (p: Pool, schema: string) =>
      (await p.query(`SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'outbox' ORDER BY ordinal_position`, [schema])).rows;
    const p = pool();
    const fresh = migrationsDir({ '0001_init.sql': 'CREATE TABLE items (id int);' });
    // Twice at once, as replicas starting together would: the lock keeps CREATE IF NOT EXISTS apart.
    await Promise.all([migrate(p, { schema: 'delta', dir: fresh, outboxes: ['delta', 'delta_game'], log }), migrate(pool(), { schema: 'delta', dir: fresh, outboxes: ['delta', 'delta_game'], log })]);
    const expected = [
      { column_name: 'id', data_type: 'uuid' },
      { column_name: 'subject', data_type: 'text' },
      { column_name: 'payload', data_type: 'jsonb' },
      { column_name: 'created_at', data_type: 'timestamp with time zone' },
      { column_name: 'published_at', data_type: 'timestamp with time zone' },
      { column_name: 'attempts', data_type: 'integer' },
      { column_name: 'last_error', data_type: 'text' },
      { column_name: 'traceparent', data_type: 'text' },
    ];
    expect(await columns(p, 'delta')).toEqual(expected);
    expect(await columns(p, 'delta_game')).toEqual(expected);
    const index = await p.query(`SELECT indexdef FROM pg_indexes WHERE schemaname = 'delta' AND indexname = 'outbox_pending'`);
    expect(index.rows[0]?.indexdef).toMatch(/WHERE \(published_at IS NULL\)/);

    // A database migrated before the runtime owned the table: its migration created it, rows and all
    // (and before tracing: the runtime adds the traceparent column).
    const old = migrationsDir({
      '0001_init.sql': `CREATE TABLE outbox (id uuid PRIMARY KEY, subject text NOT NULL, payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        published_at timestamptz, attempts int NOT NULL DEFAULT 0, last_error text);
        CREATE INDEX outbox_pending ON outbox (created_at) WHERE published_at IS NULL;
        INSERT INTO outbox (id, subject, payload) VALUES (gen_random_uuid(), 'events.x', '{}');`,
    });
    await migrate(p, { schema: 'epsilon', dir: old, log });
    await migrate(p, { schema: 'epsilon', dir: old, outboxes: ['epsilon'], log });
    expect(await columns(p, 'epsilon')).toEqual(expected);
    expect((await p.query('SELECT count(*)::int AS n FROM epsilon.outbox')).rows).toEqual([{ n: 1 }]);
  });
});
