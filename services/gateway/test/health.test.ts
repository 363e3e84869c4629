import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMemoryBus, createPool, freePort, startLocalPostgres, startService, VERSION, type LocalPostgres } from '@tasksvc/runtime';
import { schedulerService } from '@tasksvc/scheduler';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quietLogger, testConfig } from '../../../tools/testenv/index.ts';
import { buildGateway } from '../src/app.ts';

const log = quietLogger();

// A private PostgreSQL that this test stops and starts again, on a fixed port.
describe('GET /api/health', () => {
  let pg: LocalPostgres;
  let app: FastifyInstance;
  let pool: ReturnType<typeof createPool>;
  let dataDir: string;
  let port: number;
  let stopScheduler: () => Promise<void>;

  beforeAll(async () => {
    dataDir = join(mkdtempSync(join(tmpdir(), 'health-')), 'pg');
    port = await freePort();
    pg = await startLocalPostgres({ dataDir, log, port });
    const config = testConfig({ DATABASE_URL: pg.url, SERVICE_COMMIT: 'abc1234def' });
    pool = createPool(pg.url, log, { max: 3, connectTimeoutMs: 1_000 });
    const bus = createMemoryBus(log);
    const scheduler = await startService(schedulerService, { config, bus, pool, log });
    stopScheduler = () => scheduler.stop();
    app = await buildGateway({ config, bus, pool, log });
  });
  afterAll(async () => {
    await app.close();
    await stopScheduler();
    await pool.end();
    await pg.stop();
  });

  const health = async () => {
    const res = await app.inject({ method: 'GET', url: '/api/health' });
    return { status: res.statusCode, body: res.json<Record<string, unknown>>() };
  };

  it('answers 200 with status, version, commit, timestamp and cron', async () => {
    const { status, body } = await health();
    expect(status).toBe(200);
    expect(body.status).toBe('ok');
    expect(body.version).toBe(VERSION);
    expect(body.commit).toBe('abc1234def');
    expect(Date.parse(body.timestamp as string)).not.toBeNaN();
    expect(body).toHaveProperty('cron');
    expect(body.cron).toEqual({ lastRunAt: null, minutesSinceLastRun: null });
  });

  it('reports the last cron run but never fails because of it', async () => {
    await pool.query(`INSERT INTO scheduler.cron_runs (job, bucket, started_at, status) VALUES ('daily-quest', now() - interval '2 days', now() - interval '2 days', 'failed')`);
    const { status, body } = await health();
    expect(status).toBe(200);
    expect((body.cron as { minutesSinceLastRun: number }).minutesSinceLastRun).toBeGreaterThanOrEqual(2 * 24 * 60);
  });

  it('answers 503 with status error, still carrying version and commit, while the database is down, and 200 again once it is back', async () => {
    await pg.stop();
    const down = await health();
    expect(down.status).toBe(503);
    expect(down.body).toMatchObject({ status: 'error', version: VERSION, commit: 'abc1234def' });

    pg = await startLocalPostgres({ dataDir, log, port });
    let back = await health();
    for (let i = 0; i < 50 && back.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      back = await health();
    }
    expect(back.status).toBe(200);
    expect(back.body.status).toBe('ok');
  });
});
