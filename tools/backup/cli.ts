/**
 * `npm run backup [FILE]` and `npm run restore FILE [--force]` (docs/moving.md, "Backup and restore
 * of an installation"). The database is DATABASE_URL when set, otherwise the embedded PostgreSQL in
 * the data folder (DATA_DIR, default ./.data) — the one `npm start` uses; the keys are the data
 * folder's generated ones.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { createLogger, rawEnv, startLocalPostgres, type LocalPostgres } from '@tasksvc/runtime';
import { ALL_SERVICES } from '../system.ts';
import { backup, openBackup, restoreDatabase, restoreKeys } from './backup.ts';

const EMBEDDED_DATABASE = 'taskservice';

/** The port of the data folder's PostgreSQL when `npm start` is running it. */
function runningEmbedded(pgDir: string): number | undefined {
  try {
    const lines = readFileSync(join(pgDir, 'data', 'postmaster.pid'), 'utf8').split('\n');
    process.kill(Number(lines[0]), 0);
    return Number(lines[3]);
  } catch {
    return undefined;
  }
}

function usage(message: string): never {
  console.error(`${message}\nusage: npm run backup [FILE]\n       npm run restore FILE [--force]   (replace a non-empty database: --force)`);
  process.exit(2);
}

async function main() {
  const [command, ...args] = process.argv.slice(2);
  const env = rawEnv();
  const log = createLogger(command ?? 'backup', env.LOG_LEVEL || 'warn', { pretty: true });
  const production = (env.RUNTIME_ENV ?? 'development') === 'production';
  const dataDir = production && !env.DATA_DIR ? undefined : resolve(env.DATA_DIR || '.data');
  const pgDir = dataDir && join(dataDir, 'postgres');
  if (!env.DATABASE_URL && production) usage('RUNTIME_ENV=production: set DATABASE_URL to the database to back up or restore into');

  /** The database to work on, and what to stop afterwards. */
  async function database(mode: 'backup' | 'restore'): Promise<{ url: string; where: string; postgres?: LocalPostgres }> {
    if (env.DATABASE_URL) return { url: env.DATABASE_URL, where: `DATABASE_URL (${new URL(env.DATABASE_URL).host}${new URL(env.DATABASE_URL).pathname})` };
    const port = runningEmbedded(pgDir!);
    const password = () => encodeURIComponent(readFileSync(join(pgDir!, 'password'), 'utf8').trim());
    if (port !== undefined) {
      // restoring under a running installation would mix its writes with the restored rows
      if (mode === 'restore') usage(`Task Service is running on ${dataDir} (its PostgreSQL holds the data folder): stop it, then restore`);
      return { url: `postgres://postgres:${password()}@127.0.0.1:${port}/${EMBEDDED_DATABASE}`, where: `the running embedded PostgreSQL in ${pgDir}` };
    }
    if (mode === 'backup' && !existsSync(join(pgDir!, 'data', 'PG_VERSION'))) usage(`nothing to back up: no database in ${pgDir} (set DATA_DIR or DATABASE_URL)`);
    const postgres = await startLocalPostgres({ dataDir: pgDir!, log, durable: true });
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    if ((await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [EMBEDDED_DATABASE])).rowCount === 0) await admin.query(`CREATE DATABASE ${EMBEDDED_DATABASE}`);
    await admin.end();
    return { url: postgres.url.replace(/\/postgres$/, `/${EMBEDDED_DATABASE}`), where: `the embedded PostgreSQL in ${pgDir}`, postgres };
  }

  if (command === 'backup') {
    if (args.length > 1) usage('backup takes one FILE at most');
    const file = resolve(args[0] ?? `task-service-backup-${new Date().toISOString().replace(/[:.]/g, '-').replace(/-\d{3}Z$/, 'Z')}.tar`);
    const db = await database('backup');
    try {
      const t0 = Date.now();
      const m = await backup({ databaseUrl: db.url, dataDir, file, log });
      const rows = m.tables.reduce((n, t) => n + t.rows, 0);
      console.log(`backed up ${db.where}: ${m.tables.length} tables, ${rows} rows (PostgreSQL ${m.postgres}, release ${m.release}) with pg_dump ${m.database.pgDump} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      console.log(m.keys.length ? `keys from ${dataDir}: ${m.keys.map((k) => k.name).join(', ')}` : 'no generated keys in the data folder: keep AUTH_SECRET, TOTP_ENCRYPTION_KEY and the VAPID keys of your environment with the backup');
      console.log(`wrote ${file} and ${file}.sha256 (the archive holds secrets: store it like them)`);
    } finally {
      await db.postgres?.stop();
    }
  } else if (command === 'restore') {
    const force = args.includes('--force') || env.npm_config_force === 'true';
    const files = args.filter((a) => a !== '--force');
    if (files.length !== 1) usage('restore takes the backup FILE');
    const opened = await openBackup(resolve(files[0]!));
    try {
      const db = await database('restore');
      try {
        const t0 = Date.now();
        const { rows, pgRestore } = await restoreDatabase({ databaseUrl: db.url, backup: opened, services: ALL_SERVICES, force, log });
        console.log(`restored ${rows} rows of ${opened.manifest.tables.length} tables (written ${opened.manifest.createdAt} by release ${opened.manifest.release}) into ${db.where} with pg_restore ${pgRestore} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      } finally {
        await db.postgres?.stop();
      }
      if (opened.manifest.keys.length && dataDir) console.log(`keys restored into ${dataDir}: ${restoreKeys(opened.dir, opened.manifest, dataDir).join(', ')}`);
      else if (opened.manifest.keys.length) console.log(`the backup's keys (${opened.manifest.keys.map((k) => k.name).join(', ')}) were not written: RUNTIME_ENV=production has no data folder (set DATA_DIR to write them there)`);
      else console.log('the backup holds no generated keys: give the services the AUTH_SECRET, TOTP_ENCRYPTION_KEY and VAPID keys they had');
    } finally {
      opened.close();
    }
  } else {
    usage(`unknown command ${JSON.stringify(command ?? '')}`);
  }
}

main().catch((err: unknown) => {
  console.error(`${process.argv[2]} failed: ${(err as Error).message}`);
  process.exit(1);
});
