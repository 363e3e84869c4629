import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, inject } from 'vitest';
import { createDatabase, createLogger, freePort, loadConfig, type Config, type Logger } from '@tasksvc/runtime';

export { serveTestIdentities } from './identity.ts';
import { startNats, type LocalNats } from './nats.ts';
export { startNats, type LocalNats };
export { eventually, until, waitForPort } from './wait.ts';

/** A fresh, empty database on the run's shared PostgreSQL. */
export async function testDatabase(prefix = 't'): Promise<string> {
  return createDatabase(inject('pgAdminUrl'), `${prefix}_${randomBytes(6).toString('hex')}`);
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
    ...overrides,
  });
}

/** A full test environment for one file: its own database, a free port, and NATS at `natsUrl` if given (else the in-process bus). */
export async function testSystemConfig(overrides: Record<string, string | undefined> = {}, opts: { natsUrl?: string } = {}): Promise<Config> {
  const DATABASE_URL = await testDatabase();
  const PORT = String(await freePort());
  return testConfig({ DATABASE_URL, PORT, HOST: '127.0.0.1', NATS_URL: opts.natsUrl, ...overrides });
}
