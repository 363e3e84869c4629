import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { UserExport } from '@tasksvc/proto';
import { createPool, freePort, type LocalPostgres, type Pool } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyDevDefaults } from '../dev-defaults.ts';
import { startSystem, type RunningSystem } from '../system.ts';
import { quietLogger, testConfig, testDatabase } from '../testenv/index.ts';
import { seedUserEverywhere, startFailingReceiver, type SeededUser } from '../user-data/seed.ts';
import { ENSURE_SCRIPT, findPgTool, type FoundTool } from './pg-tools.ts';

/**
 * `npm run backup` / `npm run restore` as a person runs them (the CLI in a child process): a system
 * on a configured database with its keys in a data folder, users with rows in every table that
 * holds a user's id (tasks, completions, webhooks, channels, sessions, ...) → backup (the database as a
 * pg_dump custom-format archive, read back by pg_restore --list) → restore (pg_restore) into
 * a new, empty one-command data folder (embedded PostgreSQL) → `npm start`'s set-up on it: every
 * table holds the same rows, each user's export is the same document, sign-in (a session cookie,
 * an API key) still works. A restore into a database with rows refuses and changes nothing.
 */

const ROOT = new URL('../..', import.meta.url).pathname;

/**
 * The backup is a pg_dump archive: without a pg_dump/pg_restore of the embedded server's major (18)
 * there is nothing to test. CI builds them (.ci/run runs ensure-pg-dump.sh) and must not skip.
 */
const pgRestore = ((): FoundTool | undefined => {
  try {
    findPgTool('pg_dump', 18);
    return findPgTool('pg_restore', 18);
  } catch (err) {
    if (process.env.CI === 'true') throw new Error(`CI requires pg_dump/pg_restore 18: ${(err as Error).message}`, { cause: err });
    console.warn(`\n*** SKIPPING npm run backup / restore tests: ${(err as Error).message} (${ENSURE_SCRIPT}) ***\n`);
    return undefined;
  }
})();
const NODE = join(ROOT, 'node_modules/.bin/node');

function cli(args: string[], env: Record<string, string>) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !['DATABASE_URL', 'DATA_DIR', 'RUNTIME_ENV', 'npm_config_force'].includes(k)));
  const r = spawnSync(NODE, ['tools/backup/cli.ts', ...args], { cwd: ROOT, env: { ...clean, ...env }, encoding: 'utf8', timeout: 180_000 });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

/** Rows per table, in every schema the services own. */
async function rowCounts(pool: Pool): Promise<Record<string, number>> {
  const { rows: tables } = await pool.query<{ s: string; t: string }>(
    `SELECT table_schema AS s, table_name AS t FROM information_schema.tables WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema', 'public') ORDER BY 1, 2`,
  );
  const out: Record<string, number> = {};
  for (const { s, t } of tables) out[`${s}.${t}`] = (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${s}"."${t}"`)).rows[0]!.n;
  return out;
}

/**
 * A user's export without the moment it was written, without how far the notification log's
 * retries have got (the restored notifier goes on retrying the deliveries that were pending when
 * the backup was taken — the test's receiver answers 503 — as the original would have), and without
 * when the API key was last used: the export itself uses it, and its use is recorded at most once a
 * minute, so an export more than a minute after the first (a loaded machine) moves it.
 */
async function exportOf(url: string, user: SeededUser): Promise<unknown> {
  const res = await fetch(`${url}/api/user/export`, { headers: { authorization: user.authorization } });
  expect(res.status).toBe(200);
  const { exportedAt, ...rest } = (await res.json()) as UserExport;
  expect(exportedAt).toBeTruthy();
  expect(rest.notifications.log.length).toBeGreaterThan(0);
  return {
    ...rest,
    account: { ...rest.account, apiKeys: rest.account.apiKeys.map(({ lastUsedAt, ...key }) => (void lastUsedAt, key)) },
    notifications: { ...rest.notifications, log: rest.notifications.log.map(({ attempts, status, error, ...entry }) => (void [attempts, status, error], entry)) },
  };
}

/**
 * The system as `npm start` sets it up on a data folder (its keys; its embedded PostgreSQL unless
 * DATABASE_URL). `rowsBefore`: each table's rows before the services start (they retry pending
 * webhook deliveries at once, adding attempts).
 */
async function startOn(dataDir: string, databaseUrl?: string): Promise<{ sys: RunningSystem; postgres?: LocalPostgres; authSecret: string; rowsBefore: Record<string, number> }> {
  const { env, postgres } = await applyDevDefaults({ RUNTIME_ENV: 'development', DATA_DIR: dataDir, DATABASE_URL: databaseUrl }, quietLogger());
  const pool = createPool(env.DATABASE_URL!, quietLogger(), { max: 1 });
  const rowsBefore = await rowCounts(pool).finally(() => pool.end());
  const config = testConfig({
    DATABASE_URL: env.DATABASE_URL,
    AUTH_SECRET: env.AUTH_SECRET,
    TOTP_ENCRYPTION_KEY: env.TOTP_ENCRYPTION_KEY,
    PORT: String(await freePort()),
    HOST: '127.0.0.1',
    OUTBOUND_ALLOW_LIST: '127.0.0.1',
    RATE_LIMIT_WRITES: 'true',
  });
  return { sys: await startSystem(config), postgres, authSecret: env.AUTH_SECRET!, rowsBefore };
}

describe.skipIf(!pgRestore)('npm run backup / npm run restore', () => {
  const work = mkdtempSync(join(tmpdir(), 'backup-test-'));
  chmodSync(work, 0o711); // the embedded PostgreSQL's user enters it
  const source = join(work, 'source');
  const target = join(work, 'target');
  const file = join(work, 'installation.tar');
  let sourceDb: string;
  let receiver: Awaited<ReturnType<typeof startFailingReceiver>>;
  const users: SeededUser[] = [];
  let counts: Record<string, number>;
  let exports: unknown[];

  beforeAll(async () => {
    receiver = await startFailingReceiver();
    sourceDb = await testDatabase('backup');
    const { sys, authSecret } = await startOn(source, sourceDb);
    try {
      for (let i = 0; i < 3; i++) users.push(await seedUserEverywhere({ url: sys.url, pool: sys.pool, authSecret }, receiver.url, { tasks: 8 + i }));
      exports = [];
      for (const u of users) exports.push(await exportOf(sys.url, u));
    } finally {
      await sys.stop();
    }
    // counted once the services have stopped: a delivery retried while they stop adds a row
    const pool = createPool(sourceDb, quietLogger(), { max: 1 });
    counts = await rowCounts(pool).finally(() => pool.end());
  }, 240_000);

  afterAll(async () => {
    await receiver?.close();
    rmSync(work, { recursive: true, force: true });
  });

  it('backs up a configured database with the data folder keys into one tar with a checksum, a manifest and a pg_dump custom-format dump', () => {
    const r = cli(['backup', file], { DATABASE_URL: sourceDb, DATA_DIR: source });
    expect(r.status, r.out).toBe(0);
    expect(r.out).toMatch(/with pg_dump 1[89]\./);
    expect(r.out).toMatch(/keys from .*: auth-secret, totp-encryption-key, vapid-keys\.json/);
    // an ordinary tar and sha256sum read it without this tool
    execFileSync('sha256sum', ['-c', `${file}.sha256`], { cwd: work });
    const names = execFileSync('tar', ['-tf', file], { encoding: 'utf8' }).trim().split('\n');
    expect(names[0]).toBe('manifest.json');
    expect(names.sort()).toEqual(['database.dump', 'keys/auth-secret', 'keys/totp-encryption-key', 'keys/vapid-keys.json', 'manifest.json']);
    const manifest = JSON.parse(execFileSync('tar', ['-xOf', file, 'manifest.json'], { encoding: 'utf8' })) as { format: string; version: number; database: { file: string; format: string; pgDump: string; schemas: string[] }; migrations: Record<string, string[]>; tables: Array<{ name: string; rows: number }> };
    expect(manifest).toMatchObject({ format: 'task-service-backup', version: 2, database: { file: 'database.dump', format: 'pg_dump custom' } });
    expect(Object.keys(manifest.migrations).sort()).toEqual(['auth', 'gateway', 'notifier', 'scheduler', 'tasks', 'webhook']);
    expect(Object.fromEntries(manifest.tables.map((t) => [t.name, t.rows]))).toEqual(Object.fromEntries(Object.entries(counts).filter(([k]) => !k.endsWith('.schema_migrations'))));
    // pg_restore itself reads the dump: a custom-format archive of every schema, with each table's data
    execFileSync('tar', ['-xf', file, '-C', work, 'database.dump']);
    const dump = join(work, 'database.dump');
    const list = execFileSync(pgRestore!.path, ['--list', dump], { encoding: 'utf8' });
    expect(list).toMatch(/Format: CUSTOM/);
    expect(list).toMatch(/Dumped by pg_dump version: 1[89]\./);
    for (const schema of Object.keys(manifest.migrations)) expect(list).toMatch(new RegExp(`SCHEMA - ${schema} `));
    for (const table of manifest.tables.map((t) => t.name)) {
      const [schema, name] = table.split('.');
      expect(list, table).toMatch(new RegExp(`TABLE DATA ${schema} ${name} `));
    }
    // the rows are in it: a user's e-mail address comes back out of pg_restore's own SQL
    const sql = execFileSync(pgRestore!.path, ['--data-only', '--table=users', '--schema=auth', '--file=-', dump], { encoding: 'utf8', maxBuffer: 64 << 20 });
    for (const u of users) expect(sql).toContain(u.userId);
    rmSync(dump);
  }, 180_000);

  it('restores into an empty one-command data folder: the same rows, the same exports, sign-in works', async () => {
    const r = cli(['restore', file], { DATA_DIR: target });
    expect(r.status, r.out).toBe(0);
    expect(r.out).toMatch(/with pg_restore 1[89]\./);
    expect(r.out).toMatch(/keys restored into .*: auth-secret, totp-encryption-key, vapid-keys\.json/);
    const { sys, postgres, rowsBefore } = await startOn(target);
    try {
      expect(rowsBefore).toEqual(counts);
      for (const [i, u] of users.entries()) {
        // a browser session made before the backup (its token hashed with the restored AUTH_SECRET)
        const me = await fetch(`${sys.url}/api/auth/me`, { headers: { cookie: u.cookie } });
        expect(me.status).toBe(200);
        expect(await me.json()).toMatchObject({ id: u.userId, method: 'session' });
        expect(await exportOf(sys.url, u)).toEqual(exports[i]);
      }
    } finally {
      await sys.stop();
      await postgres?.stop();
    }
  }, 180_000);

  it('refuses a database or data folder that holds rows, naming --force; --force replaces its contents', async () => {
    for (const env of [{ DATA_DIR: target }, { DATABASE_URL: sourceDb, DATA_DIR: source }] as Array<Record<string, string>>) {
      const r = cli(['restore', file], env);
      expect(r.status, r.out).toBe(1);
      expect(r.out).toMatch(/restore failed: the target database is not empty \(.*hold rows\).*--force/);
    }
    // --force replaces everything in it (here: with the same installation)
    const forced = cli(['restore', file, '--force'], { DATABASE_URL: sourceDb, DATA_DIR: source });
    expect(forced.status, forced.out).toBe(0);
    const pool = createPool(sourceDb, quietLogger(), { max: 1 });
    expect(await rowCounts(pool).finally(() => pool.end())).toEqual(counts);
  }, 180_000);

  it('refuses a damaged archive before touching the database', () => {
    execFileSync('sh', ['-c', `printf 'x' | dd of=${file} bs=1 seek=2000 conv=notrunc status=none`]);
    const r = cli(['restore', file, '--force'], { DATABASE_URL: sourceDb, DATA_DIR: source });
    expect(r.status).toBe(1);
    expect(r.out).toContain('its checksum does not match');
  }, 180_000);
});
