import { readFileSync } from 'node:fs';
import { buildGateway } from '@tasksvc/gateway';
import { createMemoryBus, createPool, freePort, type Pool } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGatewayProcess } from '../testenv/gateway-process.ts';
import { fileNats, quietLogger, testConfig, testDatabase } from '../testenv/index.ts';

// The manifest the image is built from: read here independently of the runtime's VERSION constant.
const ROOT_VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
const COMMIT = '3f2a9c1d4e5b6a7988776655443322110fedcba9';

const log = quietLogger('health-version');
const nats = fileNats();
let databaseUrl: string;
const pools: Pool[] = [];
const apps: Awaited<ReturnType<typeof buildGateway>>[] = [];

beforeAll(async () => {
  databaseUrl = await testDatabase('health');
});

afterAll(async () => {
  await Promise.all(apps.map((a) => a.close()));
  await Promise.all(pools.map((p) => p.end()));
});

/** A real gateway on a real port, configured from environment-style values like a container. */
async function startGateway(env: Record<string, string | undefined>): Promise<string> {
  const port = await freePort();
  const config = testConfig({ DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1', ...env });
  const pool = createPool(config.DATABASE_URL, log, { connectTimeoutMs: 1_000 });
  pools.push(pool);
  // Open a connection first, so the health check's 2 s database limit never meets a cold pool on a
  // loaded machine (the unreachable-database case fails here quickly and is left to the check).
  await pool.query('SELECT 1').catch(() => undefined);
  const app = await buildGateway({ config, bus: createMemoryBus(log), pool, log });
  apps.push(app);
  await app.listen({ port, host: '127.0.0.1' });
  return `http://127.0.0.1:${port}`;
}

async function getHealth(base: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${base}/api/health`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** The gateway process with `extraEnv`, ready once /api/health answers 200 (the database reached). */
const gatewayProcess = (extraEnv: Record<string, string>) => startGatewayProcess({ databaseUrl, natsUrl: nats.url(), env: extraEnv, readyPath: '/api/health' });

describe('health version and commit of the running gateway', () => {
  it('reports SERVICE_COMMIT from the environment of a gateway process, null without it', async () => {
    for (const [env, commit] of [[{ SERVICE_COMMIT: COMMIT }, COMMIT], [{}, null]] as const) {
      const gw = await gatewayProcess(env);
      try {
        const { status, body } = await getHealth(gw.base);
        expect(status).toBe(200);
        expect(body).toMatchObject({ status: 'ok', version: ROOT_VERSION, commit });
      } finally {
        await gw.stop();
      }
    }
    // Two process starts; generous because a loaded CI machine can take many seconds per start.
  }, 180_000);

  it('reports the package manifest version and SERVICE_COMMIT', async () => {
    const base = await startGateway({ SERVICE_COMMIT: COMMIT });
    const { status, body } = await getHealth(base);
    expect(status).toBe(200);
    expect(ROOT_VERSION).toMatch(/^\d+\.\d+\.\d+/);
    expect(body).toMatchObject({ status: 'ok', version: ROOT_VERSION, commit: COMMIT });
    expect(Number.isNaN(Date.parse(String(body.timestamp)))).toBe(false);
    expect(body).toHaveProperty('cron');
  });

  it('reports commit null when SERVICE_COMMIT is unset or empty (local development)', async () => {
    for (const SERVICE_COMMIT of [undefined, '']) {
      const base = await startGateway({ SERVICE_COMMIT });
      const { status, body } = await getHealth(base);
      expect(status).toBe(200);
      expect(body).toMatchObject({ status: 'ok', version: ROOT_VERSION, commit: null });
    }
  });

  it('still reports version and commit with 503 when the database is unreachable', async () => {
    const port = await freePort();
    const base = await startGateway({ SERVICE_COMMIT: COMMIT, DATABASE_URL: `postgres://nobody:x@127.0.0.1:${port}/none` });
    const { status, body } = await getHealth(base);
    expect(status).toBe(503);
    expect(body).toMatchObject({ status: 'error', version: ROOT_VERSION, commit: COMMIT });
  });
});
