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

/** One private PostgreSQL and one nats-server for the whole run; each test file takes its own database. */
export default async function setup(project: TestProject) {
  const log = createLogger('testenv', 'warn');
  const dir = mkdtempSync(join(tmpdir(), 'tasksvc-test-'));
  const [pg, nats] = await Promise.all([startLocalPostgres({ dataDir: join(dir, 'pg'), log }), startNats({ storeDir: join(dir, 'nats') })]);
  project.provide('pgAdminUrl', pg.url);
  project.provide('natsUrl', nats.url);
  return async () => {
    await Promise.all([pg.stop(), nats.stop()]);
    rmSync(dir, { recursive: true, force: true });
  };
}
