import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { createDatabase, createLogger, freePort, loadConfig, type Config, type Logger } from '@tasksvc/runtime';

export { serveTestIdentities } from './identity.ts';
export { startNats, type LocalNats } from './nats.ts';
export { eventually, until, waitForPort } from './wait.ts';

/** A fresh, empty database on the run's shared PostgreSQL. */
export async function testDatabase(prefix = 't'): Promise<string> {
  return createDatabase(inject('pgAdminUrl'), `${prefix}_${randomBytes(6).toString('hex')}`);
}

export function sharedNatsUrl(): string {
  return inject('natsUrl');
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

/** A full test environment for one file: its own database, the shared NATS, a free port. */
export async function testSystemConfig(overrides: Record<string, string | undefined> = {}, opts: { nats?: boolean } = {}): Promise<Config> {
  const DATABASE_URL = await testDatabase();
  const PORT = String(await freePort());
  return testConfig({ DATABASE_URL, PORT, HOST: '127.0.0.1', NATS_URL: opts.nats ? sharedNatsUrl() : undefined, ...overrides });
}
