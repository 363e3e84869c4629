import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, inject } from 'vitest';
import { createDatabase, createLogger, createPool, freePort, loadConfig, migrate, startLocalPostgres, type Config, type LocalPostgres, type Logger, type Pool } from '@tasksvc/runtime';

export { serveTestIdentities } from './identity.ts';
import { startNats, type LocalNats } from './nats.ts';
export { startNats, type LocalNats };
export { startNatsCluster, type LocalNatsCluster, type LocalNatsClusterServer } from './nats.ts';
export { eventually, until, waitForPort } from './wait.ts';
export { zoneAtLocalHour } from './clock.ts';

/** A fresh, empty database on the run's shared PostgreSQL. */
export async function testDatabase(prefix = 't'): Promise<string> {
  return createDatabase(inject('pgAdminUrl'), `${prefix}_${randomBytes(6).toString('hex')}`);
}

/** A fresh database with a service's migrations applied (`tasksService.migrations`), on a pool of its own. */
export async function migratedDatabase(migrations: Omit<Parameters<typeof migrate>[1], 'log'>, log = quietLogger()): Promise<Pool> {
  const pool = createPool(await testDatabase(), log);
  await migrate(pool, { ...migrations, log });
  return pool;
}

/**
 * The run's nats-server, shared by every test file: only for subjects and durables a test names
 * itself (unique per test). A file that runs real services takes `fileNats()` instead.
 */
export function sharedNatsUrl(): string {
  return inject('natsUrl');
}

/**
 * A nats-server of this test file's own, started before its other `beforeAll` hooks (call it at the
 * top of the file) and stopped after the file. Services answer their fixed subjects in queue groups
 * named after them and share durable consumers by name: two files running the tasks service on one
 * server answered each other's requests (a task created through one file's gateway was read back as
 * 404 through the other's database).
 */
export function fileNats(): { url(): string } {
  let nats: LocalNats | undefined;
  beforeAll(async () => {
    nats = await startNats();
  });
  afterAll(async () => {
    await nats?.stop();
    if (nats) rmSync(nats.storeDir, { recursive: true, force: true });
  });
  return {
    url() {
      if (!nats) throw new Error('fileNats(): the server starts in a beforeAll hook; call url() inside hooks and tests');
      return nats.url;
    },
  };
}

/**
 * A PostgreSQL server of this test file's own, from the system's packages, as a distribution runs it:
 * Debian's PostgreSQL has JIT, on by default (the embedded build has no JIT library, so a plan that
 * PostgreSQL would JIT-compile runs there as if JIT were off), and pg_stat_statements is loaded, so a
 * test can read what each statement cost (`jit_functions`). Started before the file's other
 * `beforeAll` hooks (call it at the top of the file), stopped after the file. `jit` tells whether
 * the server can JIT-compile at all (pg_jit_available(): its llvmjit library is there).
 */
export function fileSystemPostgres(): { database(prefix?: string): Promise<string>; jit(): boolean } {
  let server: LocalPostgres | undefined;
  let dir: string | undefined;
  let jit = false;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tasksvc-syspg-'));
    server = await startLocalPostgres({ dataDir: join(dir, 'pg'), log: quietLogger('testenv'), binaries: 'system', settings: ['shared_preload_libraries=pg_stat_statements', 'jit=on'] });
    const admin = createPool(server.url, quietLogger('testenv'), { max: 1 });
    try {
      jit = (await admin.query<{ jit: boolean }>('SELECT pg_jit_available() AS jit')).rows[0]!.jit;
    } finally {
      await admin.end();
    }
  });
  afterAll(async () => {
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return {
    async database(prefix = 'sys') {
      if (!server) throw new Error('fileSystemPostgres(): the server starts in a beforeAll hook; call database() inside hooks and tests');
      const url = await createDatabase(server.url, `${prefix}_${randomBytes(6).toString('hex')}`);
      const c = createPool(url, quietLogger('testenv'), { max: 1 });
      await c.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements').finally(() => c.end());
      return url;
    },
    jit: () => jit,
  };
}

export function quietLogger(name = 'test'): Logger {
  return createLogger(name, process.env.TEST_LOG_LEVEL || 'silent');
}

/** A valid configuration for tests; override any variable by its spec name. */
export function testConfig(overrides: Record<string, string | undefined> = {}): Config {
  return loadConfig({
    DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none',
    AUTH_SECRET: 'test-secret-test-secret-test-secret-0123',
    AUTH_TRUST_HOST: 'true',
    RUNTIME_ENV: 'test',
    LOG_LEVEL: 'silent',
    DISABLE_UPDATE_CHECK: 'true',
    // tests create many tasks per minute; services/gateway/test/rate-limit.test.ts turns the limits on
    RATE_LIMIT_WRITES: 'false',
    // webhook and channel secrets are sealed under it; a test of its absence passes SECRETS_KEYRING: undefined
    SECRETS_KEYRING: `test:${'5e'.repeat(32)}`,
    ...overrides,
  });
}

/** A full test environment for one file: its own database, a free port, and NATS at `natsUrl` if given (else the in-process bus). */
export async function testSystemConfig(overrides: Record<string, string | undefined> = {}, opts: { natsUrl?: string } = {}): Promise<Config> {
  const DATABASE_URL = await testDatabase();
  const PORT = String(await freePort());
  return testConfig({ DATABASE_URL, PORT, HOST: '127.0.0.1', NATS_URL: opts.natsUrl, ...overrides });
}
