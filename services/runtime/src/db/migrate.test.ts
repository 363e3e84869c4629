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
});
