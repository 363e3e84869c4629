import { createLogger, createMemoryBus, createPool, startService, type Pool, type RunningService } from '@tasksvc/runtime';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { gatewayService } from '../../gateway/src/index.ts';
import { testSystemConfig } from '../../../tools/testenv/index.ts';
import { createSchedulerService } from '../src/service.ts';

let pool: Pool;
let running: RunningService[] = [];
let url: string;

beforeAll(async () => {
  const config = await testSystemConfig({ CRON_SECRET: undefined });
  const log = createLogger('test', 'silent');
  pool = createPool(config.DATABASE_URL, log);
  const bus = createMemoryBus(log);
  running = [await startService(createSchedulerService(), { config, bus, pool, log }), await startService(gatewayService, { config, bus, pool, log })];
  url = `http://127.0.0.1:${config.PORT}`;
});
afterAll(async () => {
  for (const r of running.reverse()) await r.stop();
  await pool.end();
});

it('accepts an unauthenticated POST /api/cron when CRON_SECRET is unset, and health reports the run', async () => {
  const before = (await (await fetch(`${url}/api/health`)).json()) as { cron: unknown };
  expect(before.cron).toEqual({ lastRunAt: null, minutesSinceLastRun: null });
  // no payload, but a JSON content type, as some schedulers send
  const res = await fetch(`${url}/api/cron`, { method: 'POST', headers: { 'content-type': 'application/json' } });
  expect(res.status).toBe(200);
  const after = (await (await fetch(`${url}/api/health`)).json()) as { cron: { lastRunAt: string | null; minutesSinceLastRun: number | null } };
  expect(after.cron.lastRunAt).not.toBeNull();
  expect(after.cron.minutesSinceLastRun).toBe(0);
});
