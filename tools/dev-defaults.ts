import { createECDH, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
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
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  // owner-only at every start, whatever mode an older version, a copy or an umask left (issue 56 #7)
  chmodSync(dataDir, 0o700);

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
    out.AUTH_SECRET = keptSecret(file, () => randomBytes(32).toString('base64'));
    log.warn({ file }, 'AUTH_SECRET is unset: using a generated secret kept in the data folder (development default)');
  }
  if (!out.TOTP_ENCRYPTION_KEY) {
    out.TOTP_ENCRYPTION_KEY = keptSecret(join(dataDir, 'totp-encryption-key'), () => randomBytes(32).toString('hex'));
    log.warn({ file: join(dataDir, 'totp-encryption-key') }, 'TOTP_ENCRYPTION_KEY is unset: using a generated key kept in the data folder (development default; it encrypts TOTP secrets)');
  }
  if (!out.SECRETS_KEYRING) {
    const file = join(dataDir, 'secrets-keyring');
    out.SECRETS_KEYRING = keptSecret(file, () => `dev:${randomBytes(32).toString('hex')}`);
    log.warn({ file }, 'SECRETS_KEYRING is unset: using a generated key kept in the data folder (development default; it encrypts webhook and channel secrets)');
  }
  if (!out.PUBLIC_VAPID_PUBLIC_KEY && !out.VAPID_PRIVATE_KEY) {
    const file = join(dataDir, 'vapid-keys.json');
    const keys = JSON.parse(keptSecret(file, () => JSON.stringify(generateVapidKeys()))) as { publicKey: string; privateKey: string };
    out.PUBLIC_VAPID_PUBLIC_KEY = keys.publicKey;
    out.VAPID_PRIVATE_KEY = keys.privateKey;
    log.warn({ file }, 'PUBLIC_VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY are unset: using a generated key pair kept in the data folder (development default; browser push works locally)');
  }
  if (!out.AUTH_TRUST_HOST) {
    out.AUTH_TRUST_HOST = 'false';
    log.warn('AUTH_TRUST_HOST is unset: false (development default; must be true behind a proxy)');
  }
  return { env: out, postgres };
}

/** A secret generated once and kept (owner-only) in the data folder, so restarts keep sessions and encrypted data readable. */
function keptSecret(file: string, generate: () => string): string {
  if (!existsSync(file)) writeFileSync(file, generate(), { mode: 0o600 });
  chmodSync(file, 0o600);
  return readFileSync(file, 'utf8').trim();
}

/** A VAPID key pair (P-256) in the base64url form browsers and web-push use. */
export function generateVapidKeys(): { publicKey: string; privateKey: string } {
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  const d = ecdh.getPrivateKey();
  // The private scalar is 32 bytes; Node drops leading zero bytes.
  return { publicKey: ecdh.getPublicKey().toString('base64url'), privateKey: Buffer.concat([Buffer.alloc(32 - d.length), d]).toString('base64url') };
}
