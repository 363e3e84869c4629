import { createLogger, createMemoryBus, createPool, startService, type Pool, type RunningService } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayService } from '../../gateway/src/index.ts';
import { testSystemConfig } from '../../../tools/testenv/index.ts';
import { createSchedulerService } from '../src/service.ts';

const SECRET = 'a'.repeat(64);
let pool: Pool;
let running: RunningService[] = [];
let url: string;

beforeAll(async () => {
  const config = await testSystemConfig({ CRON_SECRET: SECRET });
  const log = createLogger('test', 'silent');
  pool = createPool(config.DATABASE_URL, log);
  const bus = createMemoryBus(log);
  // Only the scheduler and the gateway: the tasks side is not needed to see that nothing runs.
  running = [await startService(createSchedulerService(), { config, bus, pool, log }), await startService(gatewayService, { config, bus, pool, log })];
  url = `http://127.0.0.1:${config.PORT}/api/cron`;
});
afterAll(async () => {
  for (const r of running.reverse()) await r.stop();
  await pool.end();
});

const runs = async () => Number((await pool.query<{ n: string }>('SELECT count(*) AS n FROM scheduler.cron_runs')).rows[0]!.n);

describe('POST /api/cron authentication', () => {
  it.each([
    ['missing', undefined],
    ['wrong', `Bearer ${'b'.repeat(64)}`],
    ['a prefix of the secret', `Bearer ${SECRET.slice(0, 32)}`],
    ['not a bearer', `Basic ${SECRET}`],
  ])('answers 401 CRON_UNAUTHORIZED for a %s token and runs nothing', async (_what, authorization) => {
    const res = await fetch(url, { method: 'POST', headers: authorization ? { authorization } : {} });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ code: 'CRON_UNAUTHORIZED' });
    expect(await runs()).toBe(0);
  });
  it('runs with the right bearer and reports every job of the bucket', async () => {
    const res = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${SECRET}` } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { jobs: { job: string }[] };
    expect(body.jobs.map((j) => j.job)).toEqual(['morning-briefing', 'overdue', 'due-today', 'recurring-due', 'daily-quest', 'streak-reminder', 'weekly-review']);
    expect(await runs()).toBeGreaterThanOrEqual(7);
  });
});
