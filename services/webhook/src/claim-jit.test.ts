import { randomUUID } from 'node:crypto';
import { createOutbound, createPool, loadConfig, migrate, type Pool } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileSystemPostgres, quietLogger, until } from '../../../tools/testenv/index.ts';
import { claimDue, ingestEvents } from './db/deliveries.ts';
import { webhookService } from './service.ts';
import { startDeliveryWorker } from './worker.ts';

/**
 * The claim on a PostgreSQL as distributions ship it: JIT on, jit_above_cost at its default. A plan
 * priced over the threshold is JIT-compiled at every run; the claim once ran with
 * `SET LOCAL enable_sort = off`, which priced its plan at ~2×10¹⁰, so every claim (four a second,
 * idle) was compiled: a core busy while nothing happened, 1.5–3 s per claim (issue 61). The
 * embedded PostgreSQL of the other tests has no JIT library and could not see it.
 */
const server = fileSystemPostgres();
const log = quietLogger('claim-jit');
let pool: Pool;

/** Statements of this database that PostgreSQL JIT-compiled, and how often the claim ran. */
async function jitFigures(): Promise<{ compiled: { query: string; functions: number }[]; claims: number }> {
  const { rows } = await pool.query<{ query: string; calls: string; jit_functions: string }>(
    'SELECT query, calls, jit_functions FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())',
  );
  return {
    compiled: rows.filter((r) => Number(r.jit_functions) > 0).map((r) => ({ query: r.query.replace(/\s+/g, ' ').slice(0, 120), functions: Number(r.jit_functions) })),
    // the claim leases rows (the redelivery does too, but no test here runs one)
    claims: rows.filter((r) => r.query.includes('"locked_until" = clock_timestamp() +')).reduce((n, r) => n + Number(r.calls), 0),
  };
}

beforeAll(async () => {
  if (!server.jit()) return;
  pool = createPool(await server.database('jit'), log);
  await migrate(pool, { ...webhookService.migrations!, log });
});
afterAll(async () => {
  await pool?.end();
});

describe('the webhook claim on a PostgreSQL with JIT on', () => {
  it('is never JIT-compiled: idle on a fresh database, and with a backlog after ANALYZE', async (ctx) => {
    if (!server.jit()) return ctx.skip('the system PostgreSQL has no JIT (llvmjit) library: install the postgresql package that ships it (Debian: postgresql-15)');
    expect((await pool.query<{ jit: string }>('SHOW jit')).rows[0]!.jit).toBe('on');

    // idle: the worker sleeps at most 20 ms between claims and finds nothing (compiled, each claim took 1.5-3 s)
    const config = loadConfig({ DATABASE_URL: 'postgres://unused@127.0.0.1:1/x', AUTH_SECRET: 'jit-test-secret-jit-test-secret-jit-test', AUTH_TRUST_HOST: 'true', RUNTIME_ENV: 'test' });
    const worker = startDeliveryWorker({ pool, outbound: createOutbound({ allowList: [] }), config, log, maxSleepMs: 20 });
    try {
      await until(async () => (await jitFigures()).claims >= 10, '10 idle claims', 60_000);
    } finally {
      await worker.stop();
    }
    expect((await jitFigures()).compiled).toEqual([]);

    // a backlog: one user's 10 endpoints with 300 events each, another user's 5 events; statistics taken
    const [a, b] = [randomUUID(), randomUUID()];
    for (let i = 0; i < 10; i++) await pool.query('INSERT INTO webhook.endpoints (id, user_id, url) VALUES ($1, $2, $3)', [randomUUID(), a, `https://127.0.0.1:${9000 + i}/hook`]);
    await pool.query('INSERT INTO webhook.endpoints (id, user_id, url) VALUES ($1, $2, $3)', [randomUUID(), b, 'https://127.0.0.1:9100/hook']);
    const body = '{}';
    await ingestEvents(pool, Array.from({ length: 300 }, () => ({ msgId: randomUUID(), userId: a, event: 'task.updated', body })));
    await ingestEvents(pool, Array.from({ length: 5 }, () => ({ msgId: randomUUID(), userId: b, event: 'task.updated', body })));
    await pool.query('ANALYZE webhook.deliveries');
    const claimed = await claimDue(pool, { limit: 512, leaseMs: 35_000, perUser: 256, perHost: 64 });
    // round-robin between users: the 5 of the user behind a backlog of 3,000 come in the first claim
    expect(claimed.filter((r) => r.userId === b)).toHaveLength(5);
    expect(claimed.filter((r) => r.userId === a)).toHaveLength(256);
    for (let i = 0; i < 5; i++) await claimDue(pool, { limit: 512, leaseMs: 35_000, perUser: 256, perHost: 64 });
    expect((await jitFigures()).compiled).toEqual([]);
  });
});
