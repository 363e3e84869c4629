/**
 * A database that is away (the database behind a TCP proxy the test cuts): a gateway started during
 * the outage stays alive and waits instead of exiting into a crash loop; while the database is away,
 * API answers are 503 (never 500) and the probes a Kubernetes liveness check asks stay 200; once it is
 * back, requests succeed again without a restart. The one-node cluster test does the same with pods
 * (tools/k8s/node-cluster.test.ts).
 */
import { authService } from '@tasksvc/auth';
import { createLogger, createNatsBus, createPool, freePort, startService, type Bus, type Pool, type RunningService } from '@tasksvc/runtime';
import { tasksService } from '@tasksvc/tasks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnGatewayProcess, type GatewayProcess } from '../testenv/gateway-process.ts';
import { fileNats, testConfig, testDatabase, until } from '../testenv/index.ts';
import { tcpProxy, type TcpProxy } from '../testenv/tcp-proxy.ts';
import { createUserWithApiKey } from '../testenv/users.ts';

const log = createLogger('db-outage', 'silent');

describe('a database outage', () => {
  const nats = fileNats();
  let proxy: TcpProxy;
  let proxiedUrl = '';
  let directPool: Pool;
  let gateway: GatewayProcess | undefined;
  let port = 0;
  let healthPort = 0;
  const running: RunningService[] = [];
  const pools: Pool[] = [];
  const buses: Bus[] = [];

  beforeAll(async () => {
    const databaseUrl = await testDatabase('dbout');
    const db = new URL(databaseUrl);
    proxy = await tcpProxy('127.0.0.1', { host: db.hostname, port: Number(db.port) });
    const proxied = new URL(databaseUrl);
    proxied.port = String(proxy.port);
    proxiedUrl = proxied.toString();
    directPool = createPool(databaseUrl, log);
    healthPort = await freePort();
  });

  afterAll(async () => {
    await gateway?.stop();
    for (const s of running) await s.stop();
    for (const b of buses) await b.close();
    for (const p of [...pools, directPool]) await p?.end();
    await proxy?.close();
  });

  const get = (url: string, headers: Record<string, string> = {}) =>
    fetch(url, { headers }).then(
      async (r) => ({ status: r.status, body: (await r.json().catch(() => null)) as Record<string, unknown> | null }),
      () => undefined,
    );

  it('a gateway started while the database is down is alive, says it waits, and serves once the database is back', async () => {
    await proxy.outage();
    const g = await spawnGatewayProcess({ databaseUrl: proxiedUrl, natsUrl: nats.url(), env: { HEALTH_PORT: String(healthPort), AUTH_SECRET: 'outage-test-secret-outage-test-secret-0' } });
    gateway = g;
    port = g.port;
    const alive = () => g.alive();
    // The reason is set after a failed attempt: the gateway met the outage and is still there.
    const waiting = await until(async () => {
      alive();
      const h = await get(`http://127.0.0.1:${healthPort}/health`);
      return h?.status === 503 && /waiting for the database/.test(String(h.body?.reason)) && h;
    }, 'the gateway to report that it waits for the database');
    expect(waiting.body).toMatchObject({ status: 'unavailable', service: 'gateway' });
    expect((await get(`http://127.0.0.1:${healthPort}/livez`))?.status).toBe(200);
    expect(await get(`http://127.0.0.1:${port}/readyz`)).toBeUndefined(); // not listening yet: not ready

    await proxy.restore();
    // the HTTP port listens (and /readyz answers) while the start completes; the probe port's /health
    // turns 200 when it has (runtime service.ts: health.ready() after startService)
    await until(async () => {
      alive();
      return (await get(`http://127.0.0.1:${port}/readyz`))?.status === 200 && (await get(`http://127.0.0.1:${healthPort}/health`))?.status === 200;
    }, 'the gateway serving once the database is back', 60_000);
    expect((await get(`http://127.0.0.1:${port}/api/health`))?.status).toBe(200);
  }, 120_000);

  it('while the database is away: 503 answers, never 500, and the probes stay 200; afterwards requests succeed again', async () => {
    const config = testConfig({ DATABASE_URL: proxiedUrl, AUTH_SECRET: 'outage-test-secret-outage-test-secret-0' });
    for (const def of [authService, tasksService]) {
      const pool = createPool(proxiedUrl, log, { connectTimeoutMs: 1_000 });
      const bus = await createNatsBus({ servers: nats.url(), name: def.name, log });
      pools.push(pool);
      buses.push(bus);
      running.push(await startService(def, { config, bus, pool, log }));
    }
    const { authorization } = await createUserWithApiKey(directPool);
    const tasks = () => get(`http://127.0.0.1:${port}/api/tasks`, { authorization });
    await until(async () => (await tasks())?.status === 200, 'GET /api/tasks through the gateway');

    await proxy.outage();
    const answers: number[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await tasks();
      answers.push(r?.status ?? 0);
      if (r?.status === 503) expect(r.body).toMatchObject({ code: 'DATABASE_UNAVAILABLE' });
    }
    expect(answers).toEqual([503, 503, 503, 503, 503]);
    expect((await get(`http://127.0.0.1:${port}/api/health`))?.status).toBe(503);
    for (const url of [`http://127.0.0.1:${port}/livez`, `http://127.0.0.1:${port}/readyz`, `http://127.0.0.1:${healthPort}/livez`]) {
      expect((await get(url))?.status, url).toBe(200);
    }

    const back = Date.now();
    await proxy.restore();
    await until(async () => (await tasks())?.status === 200, 'GET /api/tasks 200 once the database is back', 60_000);
    console.log(`[db-outage] first 200 ${((Date.now() - back) / 1000).toFixed(1)} s after the database came back`);
    expect(() => gateway!.alive()).not.toThrow();
  }, 120_000);
});
