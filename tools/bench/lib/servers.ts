/** What the benches share to start a system under test and wait for it. */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { createDatabase, freePort, loadConfig, type Logger, type Pool } from '@tasksvc/runtime';
import { tasksService } from '@tasksvc/tasks';
import { serveTestIdentities } from '../../../services/tasks/test/support.ts';
import { ALL_SERVICES, startSystem, type RunningSystem } from '../../system.ts';
import { until } from '../../testenv/wait.ts';
import { createUserWithApiKey } from '../../testenv/users.ts';

const root = new URL('../../..', import.meta.url).pathname;

/**
 * The environment of the single process (`tools/start.ts`) in a bench, besides its database, port
 * and log level. RATE_LIMIT_WRITES off: a bench measures the path, not the per-user write limit (429s).
 */
export const SINGLE_PROCESS_ENV = {
  HOST: '127.0.0.1',
  AUTH_SECRET: 'bench-secret-bench-secret-bench-secret-0',
  AUTH_TRUST_HOST: 'true',
  RUNTIME_ENV: 'test',
  DISABLE_UPDATE_CHECK: 'true',
  RATE_LIMIT_WRITES: 'false',
};

/** A program of tools/ (or a file by its absolute path: a bundle) in its own Node 24 process (with `nodeArgs` before it); stopped with SIGTERM and awaited. */
export function serverProcess(program: string, env: Record<string, string>, nodeArgs: readonly string[] = []): { pid: number; stop(): Promise<void> } {
  const child = spawn(join(root, 'node_modules', '.bin', 'node'), [...nodeArgs, program.startsWith('/') ? program : join(root, 'tools', program)], { cwd: root, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  return {
    pid: child.pid!,
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    },
  };
}

/** Until `url` answers its health check with 200. */
export async function serving(url: string, what: string, ms: number): Promise<void> {
  await until(async () => (await fetch(`${url}/api/health`).catch(() => undefined))?.status === 200, what, ms);
}

/** `n` users with one API key each, in the database of `pool`: their keys. */
export async function apiKeys(pool: Pool, n: number): Promise<string[]> {
  const keys: string[] = [];
  for (let i = 0; i < n; i++) keys.push((await createUserWithApiKey(pool)).apiKey);
  return keys;
}

/**
 * The tasks service and the gateway in this process (in-process bus, or NATS at `natsUrl`) on a new
 * database of `pgUrl`, with the tasks tests' identity TEST DOUBLE (a bearer `test-<uuid>`).
 */
export async function tasksUnderTest(pgUrl: string, log: Logger, natsUrl?: string): Promise<{ system: RunningSystem; stop: () => Promise<void> }> {
  const config = loadConfig({
    ...SINGLE_PROCESS_ENV,
    DATABASE_URL: await createDatabase(pgUrl, `bench_${randomUUID().slice(0, 8)}`),
    PORT: String(await freePort()),
    NATS_URL: natsUrl,
    LOG_LEVEL: 'silent',
  });
  const system = await startSystem(config, { log, services: [tasksService, ALL_SERVICES.find((s) => s.name === 'gateway')!] });
  const identity = serveTestIdentities(system.bus);
  return {
    system,
    stop: async () => {
      await identity.stop();
      await system.stop();
    },
  };
}
