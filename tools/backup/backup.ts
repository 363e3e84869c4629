import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, createReadStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { VERSION, type Logger, type ServiceDefinition } from '@tasksvc/runtime';
import { findPgTool, type FoundTool, type PgTool } from './pg-tools.ts';
import { readTar, writeTar } from './tar.ts';

/**
 * Backup and restore of a whole installation (docs/moving.md, "Backup and restore of an
 * installation"): the services' schemas as one pg_dump custom-format archive (`database.dump`,
 * readable by any pg_restore of its major or newer), plus the data folder's generated keys, in one
 * tar with a manifest (release, migrations applied, rows per table) and a SHA-256 per file. The
 * pg_dump and pg_restore used are of the server's major or newer (pg-tools.ts: the build of
 * tools/backup/ensure-pg-dump.sh, Debian's client directories, PATH); without one, backup and
 * restore stop and say what to install, there is no other format.
 */

export const BACKUP_FORMAT = 'task-service-backup';
/** 2: the database as a pg_dump custom-format archive (1, JSON lines per table, is no longer read). */
export const BACKUP_VERSION = 2;
const DUMP_FILE = 'database.dump';

/** The data folder's generated keys (tools/dev-defaults.ts) that the database's encrypted data and sessions depend on. */
export const KEY_FILES = ['auth-secret', 'totp-encryption-key', 'vapid-keys.json'] as const;

export interface BackupManifest {
  format: typeof BACKUP_FORMAT;
  version: typeof BACKUP_VERSION;
  createdAt: string;
  /** the release that wrote it (package.json version) */
  release: string;
  /** the server's version */
  postgres: string;
  /** the database: a pg_dump custom-format archive of `schemas`, written by pg_dump `pgDump` */
  database: { file: string; format: 'pg_dump custom'; pgDump: string; sha256: string; schemas: string[] };
  /** per schema, the migration files applied (its schema_migrations) */
  migrations: Record<string, string[]>;
  /** rows per table in the dump's snapshot: a restore checks it got exactly these */
  tables: Array<{ name: string; rows: number }>;
  keys: Array<{ name: string; file: string; sha256: string }>;
}

const SYSTEM_SCHEMAS = `('pg_catalog', 'information_schema', 'public') AND n.nspname NOT LIKE 'pg\\_%'`;
const q = (s: string) => `"${s.replace(/"/g, '""')}"`;
const qualified = (name: string) => name.split('.').map(q).join('.');

async function sha256(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Base tables in the services' schemas (not PostgreSQL's own, not `public`). */
async function listTables(c: pg.ClientBase): Promise<string[]> {
  const { rows } = await c.query<{ name: string }>(
    `SELECT n.nspname || '.' || c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition AND n.nspname NOT IN ${SYSTEM_SCHEMAS} ORDER BY 1`,
  );
  return rows.map((r) => r.name);
}

const isMigrationsTable = (name: string) => name.endsWith('.schema_migrations');

async function serverMajor(c: pg.ClientBase): Promise<number> {
  return Math.floor((await c.query<{ v: number }>(`SELECT current_setting('server_version_num')::int AS v`)).rows[0]!.v / 10_000);
}

async function rowCounts(c: pg.ClientBase, tables: string[]): Promise<Array<{ name: string; rows: number }>> {
  const out = [];
  for (const name of tables) out.push({ name, rows: (await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${qualified(name)}`)).rows[0]!.n });
  return out;
}

/**
 * Runs pg_dump or pg_restore on the database at `databaseUrl`; its password goes in the environment,
 * not on a command line others can read. Fails with the tool's own words.
 */
function runPgTool(tool: FoundTool & { name: PgTool }, databaseUrl: string, args: string[]): Promise<void> {
  const url = new URL(databaseUrl);
  const password = decodeURIComponent(url.password);
  url.password = '';
  const env = { ...process.env, PGPASSWORD: password, PGAPPNAME: `task-service-${tool.name}` };
  return new Promise((resolve, reject) => {
    const child = spawn(tool.path, [...args, `--dbname=${url.toString()}`], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`${tool.name} ${tool.version} (${tool.path}) failed: ${stderr.trim().split('\n').slice(-5).join(' / ') || `exit ${code}`}`)),
    );
  });
}

/**
 * Writes the backup of the database at `databaseUrl` (and the keys found in `dataDir`) to `file`.
 * One snapshot: this connection's REPEATABLE READ transaction exports it, pg_dump reads in it
 * (--snapshot), so the manifest's migrations and row counts describe exactly the dump; a running
 * installation may keep writing, the backup is the state of one instant.
 */
export async function backup(opts: { databaseUrl: string; dataDir?: string; file: string; log?: Logger }): Promise<BackupManifest> {
  const work = mkdtempSync(join(tmpdir(), 'tasksvc-backup-'));
  const c = new pg.Client({ connectionString: opts.databaseUrl, application_name: 'task-service-backup' });
  await c.connect();
  try {
    const pgDump = { name: 'pg_dump' as const, ...findPgTool('pg_dump', await serverMajor(c)) };
    await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const snapshot = (await c.query<{ s: string }>('SELECT pg_export_snapshot() AS s')).rows[0]!.s;
    const postgres = (await c.query<{ v: string }>('SHOW server_version')).rows[0]!.v;
    const all = await listTables(c);
    if (all.length === 0) throw new Error('the database holds no Task Service tables: nothing to back up (is DATABASE_URL the right database?)');
    const migrations: Record<string, string[]> = {};
    for (const name of all.filter(isMigrationsTable)) {
      migrations[name.split('.')[0]!] = (await c.query<{ name: string }>(`SELECT name FROM ${qualified(name)} ORDER BY name`)).rows.map((r) => r.name);
    }
    const tables = await rowCounts(c, all.filter((n) => !isMigrationsTable(n)));
    const schemas = [...new Set(all.map((n) => n.split('.')[0]!))];
    // owners and grants stay in the archive; the restore leaves them out (the target's roles differ)
    await runPgTool(pgDump, opts.databaseUrl, ['--format=custom', `--snapshot=${snapshot}`, `--file=${join(work, DUMP_FILE)}`, ...schemas.map((s) => `--schema=${q(s)}`)]);
    await c.query('COMMIT');

    const manifest: BackupManifest = {
      format: BACKUP_FORMAT,
      version: BACKUP_VERSION,
      createdAt: new Date().toISOString(),
      release: VERSION,
      postgres,
      database: { file: DUMP_FILE, format: 'pg_dump custom', pgDump: pgDump.version, sha256: await sha256(join(work, DUMP_FILE)), schemas },
      migrations,
      tables,
      keys: [],
    };
    const files: Array<{ name: string; path: string }> = [{ name: DUMP_FILE, path: join(work, DUMP_FILE) }];
    if (opts.dataDir) {
      mkdirSync(join(work, 'keys'));
      for (const key of KEY_FILES) {
        const from = join(opts.dataDir, key);
        if (!existsSync(from)) continue;
        const file = `keys/${key}`;
        copyFileSync(from, join(work, file));
        manifest.keys.push({ name: key, file, sha256: await sha256(join(work, file)) });
        files.push({ name: file, path: join(work, file) });
      }
    }
    writeFileSync(join(work, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n');
    await writeTar(opts.file, [{ name: 'manifest.json', path: join(work, 'manifest.json') }, ...files]);
    // `sha256sum -c FILE.sha256` checks the archive before it is carried anywhere
    writeFileSync(`${opts.file}.sha256`, `${await sha256(opts.file)}  ${opts.file.split('/').pop()}\n`);
    return manifest;
  } finally {
    await c.end().catch(() => undefined);
    rmSync(work, { recursive: true, force: true });
  }
}

/** Reads and checks an archive: the manifest's format and every file's SHA-256 (and FILE.sha256 when present). */
export async function openBackup(file: string): Promise<{ manifest: BackupManifest; dir: string; close(): void }> {
  if (!existsSync(file)) throw new Error(`${file}: no such file`);
  if (existsSync(`${file}.sha256`)) {
    const want = readFileSync(`${file}.sha256`, 'utf8').split(/\s+/)[0];
    if (want !== (await sha256(file))) throw new Error(`${file}: its checksum does not match ${file}.sha256 (the archive is damaged or was changed)`);
  }
  const dir = mkdtempSync(join(tmpdir(), 'tasksvc-restore-'));
  const close = () => rmSync(dir, { recursive: true, force: true });
  try {
    await readTar(createReadStream(file), dir);
    if (!existsSync(join(dir, 'manifest.json'))) throw new Error(`${file}: not a Task Service backup (no manifest.json)`);
    const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as BackupManifest;
    if (manifest.format !== BACKUP_FORMAT) throw new Error(`${file}: not a Task Service backup (format ${JSON.stringify(manifest.format)})`);
    if (manifest.version !== BACKUP_VERSION) {
      throw new Error(`${file}: backup format version ${manifest.version}; this release reads version ${BACKUP_VERSION} (a pg_dump archive of the database)${manifest.version < BACKUP_VERSION ? `: it was written before backups held one; restore it with the build that wrote it (release ${manifest.release}) and back up again` : ''}`);
    }
    for (const f of [manifest.database, ...manifest.keys]) {
      if (!existsSync(join(dir, f.file))) throw new Error(`${file}: ${f.file} is missing from the archive`);
      if ((await sha256(join(dir, f.file))) !== f.sha256) throw new Error(`${file}: ${f.file} does not match its checksum in the manifest`);
    }
    return { manifest, dir, close };
  } catch (err) {
    close();
    throw err;
  }
}

/** Tables of the target that hold rows (migration bookkeeping aside): a restore refuses to mix into them. */
export async function tablesWithRows(databaseUrl: string): Promise<string[]> {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const out: string[] = [];
    for (const name of (await listTables(c)).filter((n) => !isMigrationsTable(n))) {
      if ((await c.query(`SELECT 1 FROM ${qualified(name)} LIMIT 1`)).rowCount) out.push(name);
    }
    return out;
  } finally {
    await c.end();
  }
}

/**
 * Restores an opened backup into the database at `databaseUrl`: refuses one with rows unless
 * `force`; refuses a backup whose migrations this release does not have (a newer release's). Then
 * drops the backup's schemas in the target (a migration run there before, e.g. by `npm start`, may
 * have made them, perhaps newer) and runs pg_restore in one transaction, without the archive's owners
 * and grants (the target's roles are its own); the schemas, migrations bookkeeping, rows and sequences
 * are the backup's. Newer migrations run at the next start, as after an upgrade. Finally checks every
 * table holds the manifest's rows.
 */
export async function restoreDatabase(opts: { databaseUrl: string; backup: { manifest: BackupManifest; dir: string }; services: ServiceDefinition[]; force?: boolean; log: Logger }): Promise<{ rows: number; pgRestore: string }> {
  const { manifest, dir } = opts.backup;
  const busy = await tablesWithRows(opts.databaseUrl);
  if (busy.length > 0 && !opts.force) {
    throw new Error(`the target database is not empty (${busy.slice(0, 5).join(', ')}${busy.length > 5 ? ', …' : ''} hold rows): restore into an empty database or data folder, or pass --force to replace everything in it`);
  }
  const bySchema = new Map(opts.services.filter((s) => s.migrations).map((s) => [s.migrations!.schema, s]));
  for (const schema of Object.keys(manifest.migrations)) {
    if (!bySchema.has(schema)) throw new Error(`the backup has a schema "${schema}" that no service of this release migrates (written by release ${manifest.release})`);
    const own = bySchema.get(schema)!.migrations!.dir;
    const missing = manifest.migrations[schema]!.filter((f) => !existsSync(join(own, f)));
    if (missing.length) throw new Error(`the backup was written by a newer release (${manifest.release}): migration ${schema}/${missing[0]} is not in this one; restore with that release or a later one`);
  }

  const c = new pg.Client({ connectionString: opts.databaseUrl, application_name: 'task-service-restore' });
  await c.connect();
  try {
    // a pg_restore older than the server or than the pg_dump that wrote the archive cannot be trusted with either
    const archiveMajor = Number(manifest.database.pgDump.split('.')[0]);
    const pgRestore = { name: 'pg_restore' as const, ...findPgTool('pg_restore', Math.max(await serverMajor(c), archiveMajor)) };
    for (const s of manifest.database.schemas) await c.query(`DROP SCHEMA IF EXISTS ${q(s)} CASCADE`);
    opts.log.info({ pgRestore: pgRestore.path, version: pgRestore.version }, 'restoring the database with pg_restore');
    await runPgTool(pgRestore, opts.databaseUrl, ['--single-transaction', '--exit-on-error', '--no-owner', '--no-privileges', join(dir, manifest.database.file)]).catch((err: Error) => {
      throw new Error(`${err.message} (the target's schemas ${manifest.database.schemas.join(', ')} were dropped and nothing was restored into them: run the restore again once the cause is fixed)`);
    });
    const got = await rowCounts(c, manifest.tables.map((t) => t.name));
    const wrong = manifest.tables.filter((t, i) => got[i]!.rows !== t.rows);
    if (wrong.length) throw new Error(`after pg_restore, ${wrong.map((t) => `${t.name} holds ${got[manifest.tables.indexOf(t)]!.rows} rows, the backup says ${t.rows}`).join('; ')}`);
    return { rows: manifest.tables.reduce((n, t) => n + t.rows, 0), pgRestore: `${pgRestore.version} (${pgRestore.path})` };
  } finally {
    await c.end().catch(() => undefined);
  }
}

/** Writes the backup's keys into the data folder (owner-only), replacing what is there. */
export function restoreKeys(backupDir: string, manifest: BackupManifest, dataDir: string): string[] {
  mkdirSync(dataDir, { recursive: true });
  for (const k of manifest.keys) {
    writeFileSync(join(dataDir, k.name), readFileSync(join(backupDir, k.file)), { mode: 0o600 });
    chmodSync(join(dataDir, k.name), 0o600);
  }
  return manifest.keys.map((k) => k.name);
}
