import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { quietLogger } from '../../../../tools/testenv/index.ts';
import { startLocalPostgres } from './local-postgres.ts';
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
});
