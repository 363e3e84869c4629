import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { quietLogger, testSystemConfig } from '../../../../tools/testenv/index.ts';
import { startLocalPostgres } from './local-postgres.ts';
import { Statement } from './orm.ts';
import { createPool } from './pool.ts';

describe('database pool', () => {
  it('survives the server going away while a client is checked out, and works again when it is back', async () => {
    const log = quietLogger();
    const dataDir = join(mkdtempSync(join(tmpdir(), 'pool-')), 'pg');
    let pg = await startLocalPostgres({ dataDir, log });
    const port = pg.port;
    const pool = createPool(pg.url, log, { max: 2, connectTimeoutMs: 1_000 });
    const held = await pool.connect();
    await held.query('BEGIN');
    await pg.stop(); // the held client's connection is terminated: it emits 'error'
    await new Promise((r) => setTimeout(r, 200));
    await expect(held.query('SELECT 1')).rejects.toThrow();
    held.release(true);
    pg = await startLocalPostgres({ dataDir, log, port });
    await expect(pool.query('SELECT 1 AS one')).resolves.toMatchObject({ rows: [{ one: 1 }] });
    await pool.end();
    await pg.stop();
  });

  it('prepares each parameterised statement once per connection, then only binds it; plain statements stay unprepared', async () => {
    const pool = createPool((await testSystemConfig()).DATABASE_URL, quietLogger(), { max: 1 });
    try {
      for (const n of [1, 2, 3]) expect((await pool.query<{ n: number }>('SELECT $1::int + 1 AS n', [n])).rows[0]!.n).toBe(n + 1);
      await pool.query('SELECT 42');
      const { rows } = await pool.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements');
      expect(rows.map((r) => r.statement)).toEqual(['SELECT $1::int + 1 AS n']);
    } finally {
      await pool.end();
    }
  });

  it('sends a statement made with prepare: false unnamed (planned for the tables as they are at every run)', async () => {
    const pool = createPool((await testSystemConfig()).DATABASE_URL, quietLogger(), { max: 1 });
    try {
      const unprepared = new Statement<{ d: number }>(sql`SELECT ${sql.placeholder('n')}::int * 2 AS d`, undefined, { prepare: false });
      const prepared = new Statement<{ d: number }>(sql`SELECT ${sql.placeholder('n')}::int * 3 AS d`);
      for (const n of [1, 2, 3, 4, 5, 6, 7]) {
        expect((await unprepared.run(pool, { n })).rows).toEqual([{ d: n * 2 }]);
        expect((await prepared.run(pool, { n })).rows).toEqual([{ d: n * 3 }]);
      }
      const { rows } = await pool.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements');
      expect(rows.map((r) => r.statement)).toEqual([prepared.text]);
    } finally {
      await pool.end();
    }
  });

  it('prepares nothing with prepare: false (DATABASE_PREPARED_STATEMENTS=false, for poolers that cannot keep them)', async () => {
    const pool = createPool((await testSystemConfig()).DATABASE_URL, quietLogger(), { max: 1, prepare: false });
    try {
      expect((await pool.query<{ n: number }>('SELECT $1::int + 1 AS n', [1])).rows[0]!.n).toBe(2);
      expect((await pool.query('SELECT statement FROM pg_prepared_statements')).rows).toEqual([]);
    } finally {
      await pool.end();
    }
  });
});
