import { cronStatusRpc, pingRpc, SERVICE_NAMES, type HealthResponse } from '@tasksvc/proto';
import { VERSION, type Bus, type Config, type Pool } from '@tasksvc/runtime';
import type { FastifyInstance } from 'fastify';

const DB_CHECK_TIMEOUT_MS = 2_000;

async function databaseReachable(pool: Pool): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      pool.query('SELECT 1'),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), DB_CHECK_TIMEOUT_MS);
      }),
    ]);
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * GET /api/health exactly as the spec has it: 200 `ok`, or 503 `error` when the database is
 * unreachable; `version` and `commit` always (they need no database); `cron` is informational.
 */
export function registerHealth(app: FastifyInstance, deps: { bus: Bus; pool: Pool; config: Config; draining?: () => boolean }): void {
  const commit = deps.config.SERVICE_COMMIT ?? null;
  // Kubernetes probes. Neither asks the database or the bus: every replica shares them, so a probe
  // that failed with them would restart (liveness) or unlist (readiness) every gateway at once, and a
  // client would get refused connections instead of the 503 that says what is wrong. /api/health
  // still reports the database for monitoring and the spec's contract.
  app.get('/livez', async (_req, reply) => reply.header('cache-control', 'no-store').send({ status: 'ok' }));
  app.get('/readyz', async (_req, reply) => {
    const draining = deps.draining?.() ?? false;
    return reply
      .code(draining ? 503 : 200)
      .header('cache-control', 'no-store')
      .send({ status: draining ? 'draining' : 'ok' });
  });
  app.get('/api/health', async (_req, reply) => {
    const [dbOk, cron] = await Promise.all([
      databaseReachable(deps.pool),
      deps.bus.request(cronStatusRpc, {}, { timeoutMs: 1_000 }).catch(() => null),
    ]);
    const body: HealthResponse = { status: dbOk ? 'ok' : 'error', version: VERSION, commit, timestamp: new Date().toISOString(), cron };
    return reply.code(dbOk ? 200 : 503).header('cache-control', 'no-store').send(body);
  });

  /** Which services answer on the bus (not part of the spec's health contract, so kept apart). */
  app.get('/api/health/services', async (_req, reply) => {
    const entries = await Promise.all(
      SERVICE_NAMES.filter((s) => s !== 'gateway').map(async (name) => {
        try {
          const pong = await deps.bus.request(pingRpc(name), {}, { timeoutMs: 1_000 });
          return [name, { up: true, version: pong.version, instance: pong.instance }] as const;
        } catch {
          return [name, { up: false }] as const;
        }
      }),
    );
    return reply.header('cache-control', 'no-store').send({ gateway: { up: true, version: VERSION }, ...Object.fromEntries(entries) });
  });
}
