import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createPool, migrate, CASING, type Pool, type ServiceDefinition } from '@tasksvc/runtime';
import { generateDrizzleJson, generateMigration, type DrizzleSnapshotJSON } from 'drizzle-kit/api';
import { quietLogger, testDatabase } from './index.ts';

const run = promisify(execFile);
const DRIZZLE_KIT = new URL('../../node_modules/.bin/drizzle-kit', import.meta.url).pathname;

interface Table {
  schema: string;
  name: string;
  columns: Record<string, { name: string; default?: string }>;
  indexes: Record<string, { name: string; where?: string; columns: { expression: string; opclass?: string }[] }>;
  uniqueConstraints: Record<string, { name: string; columns: string[] }>;
  compositePrimaryKeys: Record<string, { name: string; columns: string[] }>;
  checkConstraints: Record<string, { name: string; value: string }>;
}

interface Snapshot {
  id: string;
  tables: Record<string, Table>;
}

/**
 * Where `drizzle-kit pull` and schema.ts may spell the same thing two ways, make both sides say it as
 * PostgreSQL does, table by table in a transaction that is rolled back: column defaults, partial
 * index predicates and CHECK expressions (schema.ts's are set on the migrated table and read back
 * with pg_get_expr / pg_get_constraintdef; pull writes `'{}'::text[]` as `'{""}'`), and the column order of unique and
 * composite primary keys (read from pg_constraint; pull does not keep it). Index operator classes are
 * left out on both sides (pull guesses them; no index here names one).
 */
async function inPostgresSpelling(pool: Pool, pulled: Snapshot, declared: Snapshot): Promise<void> {
  for (const t of [...Object.values(pulled.tables), ...Object.values(declared.tables)]) for (const i of Object.values(t.indexes)) for (const c of i.columns) delete c.opclass;
  for (const [key, actual] of Object.entries(pulled.tables)) {
    const table = `"${actual.schema}"."${actual.name}"`;
    const want = declared.tables[key];
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const defaults = async () =>
        new Map(
          (
            await client.query<{ name: string; def: string }>(
              'SELECT a.attname AS name, pg_get_expr(d.adbin, d.adrelid) AS def FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum WHERE d.adrelid = $1::regclass',
              [table],
            )
          ).rows.map((r) => [r.name, r.def]),
        );
      const keys = await client.query<{ name: string; columns: string[] }>(
        `SELECT conname AS name, ARRAY(SELECT a.attname FROM unnest(conkey) WITH ORDINALITY k(n, i) JOIN pg_attribute a ON a.attrelid = conrelid AND a.attnum = k.n ORDER BY k.i)::text[] AS columns
           FROM pg_constraint WHERE conrelid = $1::regclass AND contype IN ('u', 'p')`,
        [table],
      );
      for (const k of keys.rows) for (const c of [actual.uniqueConstraints[k.name], actual.compositePrimaryKeys[k.name]]) if (c) c.columns = k.columns;
      const before = await defaults();
      for (const c of Object.values(actual.columns)) {
        if (before.has(c.name)) c.default = before.get(c.name);
        else delete c.default;
      }
      const predicate = async (index: string) =>
        (await client.query<{ where: string | null }>(`SELECT pg_get_expr(indpred, indrelid) AS where FROM pg_index WHERE indexrelid = $1::regclass`, [`"${actual.schema}"."${index}"`])).rows[0]?.where;
      for (const i of Object.values(actual.indexes)) if (i.where) i.where = (await predicate(i.name)) ?? i.where;
      if (!want) continue;
      for (const [n, i] of Object.values(want.indexes).entries()) {
        if (!i.where) continue;
        await client.query(`CREATE INDEX drift_probe_${n} ON ${table} ("${i.columns[0]!.expression}") WHERE ${i.where}`);
        i.where = (await predicate(`drift_probe_${n}`)) ?? i.where;
      }
      const columns = Object.values(want.columns).filter((c) => actual.columns[c.name]);
      for (const c of columns) await client.query(c.default === undefined ? `ALTER TABLE ${table} ALTER COLUMN "${c.name}" DROP DEFAULT` : `ALTER TABLE ${table} ALTER COLUMN "${c.name}" SET DEFAULT ${c.default}`);
      const after = await defaults();
      for (const c of columns) {
        if (after.has(c.name)) c.default = after.get(c.name);
        else delete c.default;
      }
      const checks = Object.values(want.checkConstraints);
      for (const [i, check] of checks.entries()) await client.query(`ALTER TABLE ${table} ADD CONSTRAINT drift_probe_${i} CHECK (${check.value}) NOT VALID`);
      const defs = await client.query<{ name: string; def: string }>(`SELECT conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = $1::regclass AND conname LIKE 'drift_probe_%'`, [table]);
      for (const [i, check] of checks.entries()) {
        const def = defs.rows.find((r) => r.name === `drift_probe_${i}`)!.def;
        // as drizzle-kit pull writes it
        check.value = def.replace(/\s+NOT VALID$/, '').replace(/^CHECK\s*\(\(/, '').replace(/\)\)\s*$/, '');
      }
    } finally {
      await client.query('ROLLBACK').catch(() => undefined);
      client.release();
    }
  }
}

/** What drizzle-kit would still have to do, each way; both empty when schema.ts and the migrations agree. */
export interface SchemaDrift {
  /** statements that would bring a database migrated from `migrations/*.sql` to `schema.ts` */
  database: string[];
  /** statements `drizzle-kit generate` would write now: schema.ts changed without a generated migration */
  snapshot: string[];
}

/**
 * Does `schema.ts` describe exactly the database its service's migrations make? Applies the
 * migrations (and the runtime's outbox tables) to a fresh database with the service's own migrator,
 * introspects it with `drizzle-kit pull`, and diffs that against the schema module with drizzle-kit's
 * own differ (`generateMigration`). The runtime's tables (`schema_migrations`, `outbox`, `dead_letters`) are not the
 * service's to declare and are left out. CHECK expressions are compared as PostgreSQL prints them
 * (the schema's are normalised by the database itself), so `type IN ('A', 'B')` in schema.ts equals
 * the stored `type = ANY (ARRAY['A'::text, 'B'::text])`.
 *
 * Also compares schema.ts with the newest snapshot in `migrations/meta`, the one `drizzle-kit
 * generate` diffs against.
 */
export async function schemaDrift(service: ServiceDefinition, schema: Record<string, unknown>): Promise<SchemaDrift> {
  const m = service.migrations;
  if (!m) throw new Error(`${service.name} has no migrations`);
  const url = await testDatabase(`drift_${service.name}`);
  const pool = createPool(url, quietLogger());
  const dir = await mkdtemp(join(tmpdir(), `drift-${service.name}-`));
  try {
    await migrate(pool, { ...m, log: quietLogger() });
    await writeFile(join(dir, 'drizzle.config.ts'), `export default ${JSON.stringify({ dialect: 'postgresql', dbCredentials: { url }, schemaFilter: [m.schema], out: dir })};`);
    await run(DRIZZLE_KIT, ['pull', '--config', join(dir, 'drizzle.config.ts')], { cwd: dir, timeout: 120_000 });
    const pulled = JSON.parse(await readFile(join(dir, 'meta', '0000_snapshot.json'), 'utf8')) as Snapshot;
    for (const key of Object.keys(pulled.tables)) if (['schema_migrations', 'outbox', 'dead_letters'].includes(pulled.tables[key]!.name)) delete pulled.tables[key];

    const declared = generateDrizzleJson(schema, pulled.id, [m.schema], CASING) as unknown as Snapshot;
    await inPostgresSpelling(pool, pulled, declared);
    const database = await generateMigration(pulled, declared);

    const meta = join(m.dir, 'meta');
    const snapshots = (await readdir(meta)).filter((f) => f.endsWith('_snapshot.json')).sort();
    const latest = JSON.parse(await readFile(join(meta, snapshots[snapshots.length - 1]!), 'utf8')) as DrizzleSnapshotJSON;
    const snapshot = await generateMigration(latest, generateDrizzleJson(schema, latest.id, undefined, CASING));
    return { database, snapshot };
  } finally {
    await pool.end();
    await rm(dir, { recursive: true, force: true });
  }
}
