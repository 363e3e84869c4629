import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNats, testDatabase, until, type LocalNats } from '../../../tools/testenv/index.ts';

/**
 * A bus-only service run as its own process (the way its pod runs it) answers Kubernetes probes on
 * HEALTH_PORT: /health 200 once subscribed, 503 while the bus is gone (/livez still 200) and 200 again
 * when it is back; on SIGTERM it stops and exits 0.
 */
const TASKS_MAIN = fileURLToPath(new URL('../../tasks/src/main.ts', import.meta.url));

describe('GET /health on HEALTH_PORT (services run alone)', () => {
  let nats: LocalNats;
  let port: number;
  let databaseUrl: string;
  beforeAll(async () => {
    nats = await startNats();
    port = await freePort();
    databaseUrl = await testDatabase();
  });
  afterAll(async () => {
    await nats?.stop();
  });

  const health = () =>
    fetch(`http://127.0.0.1:${port}/health`).then(
      async (r) => ({ status: r.status, body: (await r.json()) as { status: string; reason?: string } }),
      () => undefined,
    );

  it('reports ready, bus loss and recovery, and shutdown', async () => {
    const child = spawn(process.execPath, [TASKS_MAIN], {
      env: { ...process.env, DATABASE_URL: databaseUrl, NATS_URL: nats.url, HEALTH_PORT: String(port), AUTH_SECRET: 'x'.repeat(40), AUTH_TRUST_HOST: 'true', RUNTIME_ENV: 'test', LOG_LEVEL: 'warn', DISABLE_UPDATE_CHECK: 'true' },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    try {
      expect(await until(async () => (await health())?.status === 200 && health(), 'the tasks service ready on HEALTH_PORT', 60_000)).toEqual({ status: 200, body: { status: 'ok', service: 'tasks' } });
      await nats.stop();
      const down = await until(async () => {
        const h = await health();
        return h?.status === 503 && h;
      }, 'health to notice the bus is gone');
      expect(down.body).toMatchObject({ status: 'unavailable', reason: 'bus unreachable' });
      expect((await fetch(`http://127.0.0.1:${port}/livez`)).status).toBe(200); // alive all the same
      await nats.restart();
      await until(async () => (await health())?.status === 200, 'health back once NATS is', 60_000);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(await health()).toBeUndefined();
    } finally {
      child.kill('SIGKILL');
    }
  }, 120_000);
});
