import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, startLocalPostgres } from '@tasksvc/runtime';
import type { TestProject } from 'vitest/node';
import { startNats } from './nats.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    pgAdminUrl: string;
    natsUrl: string;
  }
}

/**
 * One private PostgreSQL and one nats-server for the whole run; each test file takes its own database.
 * `TESTENV_POSTGRES=system` runs the files against the system's PostgreSQL instead of the embedded
 * one: Debian's has JIT (on by default, as in the official images), the embedded build has none, so a
 * plan PostgreSQL would JIT-compile is only seen there (`TESTENV_POSTGRES=system vitest run <files>`).
 */
export default async function setup(project: TestProject) {
  const log = createLogger('testenv', 'warn');
  const dir = mkdtempSync(join(tmpdir(), 'tasksvc-test-'));
  const binaries = process.env.TESTENV_POSTGRES === 'system' ? 'system' : 'embedded';
  const [pg, nats] = await Promise.all([startLocalPostgres({ dataDir: join(dir, 'pg'), log, binaries }), startNats({ storeDir: join(dir, 'nats') })]);
  project.provide('pgAdminUrl', pg.url);
  project.provide('natsUrl', nats.url);
  return async () => {
    await Promise.all([pg.stop(), nats.stop()]);
    rmSync(dir, { recursive: true, force: true });
  };
}
