import { Column, fillPlaceholders, is, SQL, sql } from 'drizzle-orm';
import { toSnakeCase } from 'drizzle-orm/casing';
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import { PgDialect } from 'drizzle-orm/pg-core';
import pg from 'pg';

/**
 * The data layer's entry (docs/architecture.md, Data layer). Each service declares its tables once
 * in `src/db/schema.ts` (drizzle, camelCase keys, snake_case columns) and its repositories in
 * `src/db/*.ts` are the only code that writes SQL: the query builder through `orm(q)`, and the
 * set-based hot paths as `statement(sql…)` templates rendered once.
 */

/** A pool, or a checked-out client: a repository runs on whichever it is given (inside a transaction, on the transaction's client). */
export type Queryable = pg.Pool | pg.PoolClient;
export type Db = NodePgDatabase;

/** Column names are the schema's keys in snake_case (`userId` → `user_id`). */
export const CASING = 'snake_case';

const handles = new WeakMap<Queryable, Db>();

/**
 * The drizzle database over `q`, made once per pool or connection (pg-pool hands out the same
 * client objects again). Every statement goes through `q`, so it is prepared, traced and counted
 * like any other (see `createPool`), and inside `inTransaction` it runs on the transaction's client.
 */
export function orm(q: Queryable): Db {
  let db = handles.get(q);
  if (!db) {
    db = drizzle({ client: q, casing: CASING });
    handles.set(q, db);
  }
  return db;
}

const dialect = new PgDialect({ casing: CASING });

/**
 * Date and time values reach the row mappers as PostgreSQL sent them, as in drizzle's own driver: a
 * `date` stays a calendar date (`YYYY-MM-DD`, never a JS Date in the server's zone) and a
 * `timestamptz` becomes a Date through its column.
 */
const RAW = new Set<number>([pg.types.builtins.TIMESTAMPTZ, pg.types.builtins.TIMESTAMP, pg.types.builtins.DATE, pg.types.builtins.INTERVAL, 1115, 1182, 1185, 1187, 1231]);
const rawDates = {
  getTypeParser: ((id: number, format?: 'text' | 'binary') => (RAW.has(id) ? (v: string) => v : pg.types.getTypeParser(id, format))) as typeof pg.types.getTypeParser,
};

/** What a statement selects: a column (mapped as its schema says) or an SQL expression (typed with `sql<T>`, mapped by its `mapWith`). */
export type Field = Column | SQL | SQL.Aliased;
export type Fields = Record<string, Field>;

/** The row type of a selection: each column's data type, each expression's declared type. */
export type RowOf<F extends Fields> = {
  [K in keyof F]: F[K] extends Column ? F[K]['_']['notNull'] extends true ? F[K]['_']['data'] : F[K]['_']['data'] | null : F[K] extends SQL<infer T> | SQL.Aliased<infer T> ? T : never;
};

/** A column's name in the database (`userId` → `user_id`). */
export function columnName(column: Column): string {
  return column.keyAsName ? toSnakeCase(column.name) : column.name;
}

/**
 * Columns by their bare names, comma-separated, for where SQL allows no qualified name: an INSERT's
 * column list and the left side of an UPDATE's SET (`${names(t.userId)} = …`).
 */
export function names(...columns: Column[]): SQL {
  return sql.raw(columns.map((c) => `"${columnName(c)}"`).join(', '));
}

/** `<field> AS "<key>", …`: a selection list for a template whose rows come back keyed like `fields`. */
export function selectList(fields: Fields): SQL {
  return sql.join(
    Object.entries(fields).map(([key, f]) => sql`${is(f, SQL.Aliased) ? f.sql : f} AS ${sql.identifier(key)}`),
    sql`, `,
  );
}

function rowMapper<R>(fields: Fields | undefined): (raw: Record<string, unknown>) => R {
  if (!fields) return (raw) => raw as R;
  const decoders = Object.entries(fields).map(([key, f]) => {
    // an expression's decoder is what `.mapWith()` gave it (drizzle keeps it off the public type)
    const expression = (e: SQL) => (e as unknown as { decoder: { mapFromDriverValue(v: unknown): unknown } }).decoder;
    const decode = is(f, Column) ? (v: unknown) => f.mapFromDriverValue(v) : (v: unknown) => expression(is(f, SQL) ? f : f.sql).mapFromDriverValue(v);
    return [key, decode] as const;
  });
  return (raw) => {
    const row: Record<string, unknown> = {};
    for (const [key, decode] of decoders) {
      const v = raw[key];
      row[key] = v === null || v === undefined ? null : decode(v);
    }
    return row as R;
  };
}

/**
 * A set-based statement written as a drizzle `sql` template (column names from the schema, values as
 * `sql.placeholder('name')`), rendered to text once. Each run only binds the values: no builder
 * work, the same text every time, so the pool's prepared statement is found by a map lookup and
 * PostgreSQL only binds and executes it. Rows are keyed like `fields` (see `selectList`) and
 * mapped through their columns.
 */
export class Statement<R = Record<string, unknown>> {
  readonly text: string;
  private readonly params: unknown[];
  private readonly map: (raw: Record<string, unknown>) => R;

  constructor(query: SQL, fields?: Fields) {
    const q = dialect.sqlToQuery(query);
    this.text = q.sql;
    this.params = q.params;
    this.map = rowMapper<R>(fields);
  }

  /** Run it on `q` with the placeholders' values; the mapped rows and how many rows it touched. */
  async run(q: Queryable, values: Record<string, unknown> = {}): Promise<{ rows: R[]; rowCount: number }> {
    const res = await q.query<Record<string, unknown>>({ text: this.text, values: fillPlaceholders(this.params, values), types: rawDates });
    return { rows: res.rows.map(this.map), rowCount: res.rowCount ?? 0 };
  }
}

/** A statement whose row type follows its selection. */
export function statement<F extends Fields>(query: SQL, fields: F): Statement<RowOf<F>>;
/** A statement whose rows come back unmapped, typed by the caller (counts, ids, text; dates and timestamps stay text). */
export function statement<R = Record<string, unknown>>(query: SQL): Statement<R>;
export function statement(query: SQL, fields?: Fields): Statement<unknown> {
  return new Statement(query, fields);
}

/**
 * Statements whose text depends on the shape of a request (which filters, which columns), each
 * rendered the first time its shape is seen. Bounded: shapes come from code paths, never from
 * values, so the map stays small.
 */
export class StatementCache<R> {
  private readonly byShape = new Map<string, Statement<R>>();
  get(shape: string, build: () => Statement<R>): Statement<R> {
    let s = this.byShape.get(shape);
    if (!s) {
      s = build();
      if (this.byShape.size < 1_000) this.byShape.set(shape, s);
    }
    return s;
  }
}

/** A row as JSON carries it: each top-level Date as its ISO string (`2026-01-02T03:04:05.000Z`), everything else as it is. */
export type JsonView<T> = { [K in keyof T]: IsoDate<T[K]> };
type IsoDate<V> = V extends Date ? string : V;

export function jsonView<T extends object>(row: T): JsonView<T> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) out[k] = v instanceof Date ? v.toISOString() : v;
  return out as JsonView<T>;
}
