import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { startLocalPostgres, type LocalPostgres, type Logger } from '@tasksvc/runtime';

/**
 * A newcomer's `npm start` with no environment at all: outside production, fill what the spec
 * requires with local defaults, and say so for each one. Production gets no defaults.
 */
export async function applyDevDefaults(env: Record<string, string | undefined>, log: Logger): Promise<{ env: Record<string, string | undefined>; postgres?: LocalPostgres }> {
  const out = { ...env };
  if ((out.RUNTIME_ENV ?? 'development') === 'production') return { env: out };
  const dataDir = resolve(out.DATA_DIR || '.data');
  mkdirSync(dataDir, { recursive: true });

  let postgres: LocalPostgres | undefined;
  if (!out.DATABASE_URL) {
    postgres = await startLocalPostgres({ dataDir: join(dataDir, 'postgres'), log, durable: true, port: out.EMBEDDED_PG_PORT ? Number(out.EMBEDDED_PG_PORT) : undefined });
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', ['taskservice']);
    if (exists.rowCount === 0) await admin.query('CREATE DATABASE taskservice');
    await admin.end();
    out.DATABASE_URL = postgres.url.replace(/\/postgres$/, '/taskservice');
    log.warn({ dataDir: join(dataDir, 'postgres') }, 'DATABASE_URL is unset: using the embedded PostgreSQL (development default)');
  }
  if (!out.AUTH_SECRET) {
    const file = join(dataDir, 'auth-secret');
    if (!existsSync(file)) writeFileSync(file, randomBytes(32).toString('base64'), { mode: 0o600 });
    out.AUTH_SECRET = readFileSync(file, 'utf8').trim();
    log.warn({ file }, 'AUTH_SECRET is unset: using a generated secret kept in the data folder (development default)');
  }
  if (!out.AUTH_TRUST_HOST) {
    out.AUTH_TRUST_HOST = 'false';
    log.warn('AUTH_TRUST_HOST is unset: false (development default; must be true behind a proxy)');
  }
  return { env: out, postgres };
}
