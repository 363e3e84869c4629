import { Column, is, noopDecoder, Param, Placeholder, SQL, sql } from 'drizzle-orm';
import { toSnakeCase } from 'drizzle-orm/casing';
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import { PgDialect } from 'drizzle-orm/pg-core';
import pg from 'pg';
import { isoString, poolTypes, timestamptzIso } from './timestamps.ts';

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
 * A `date` reaches the row mappers as PostgreSQL sent it, a calendar date (`YYYY-MM-DD`, never a JS
 * Date in the server's zone), as in drizzle's own driver; pg parses everything else itself
 * (timestamps to Dates, integers, booleans, arrays, JSON), so most values need no mapping at all.
 */
const RAW = new Set<number>([pg.types.builtins.DATE, 1182 /* date[] */]);
const rawDates = {
  getTypeParser: ((id: number, format?: 'text' | 'binary') => (RAW.has(id) ? (v: string) => v : poolTypes.getTypeParser(id, format))) as typeof pg.types.getTypeParser,
};
const TIMESTAMPTZ: number = pg.types.builtins.TIMESTAMPTZ;
/** rawDates, and each `timestamptz` as its ISO string (a jsonStatement's rows) */
const isoInstants = {
  getTypeParser: ((id: number, format?: 'text' | 'binary') => (id === TIMESTAMPTZ && format !== 'binary' ? timestamptzIso : rawDates.getTypeParser(id, format))) as typeof pg.types.getTypeParser,
};
/** Types pg itself turns into the value the column's mapping would make (a number, an array, an object, a Date; a jsonStatement's ISO string). */
const PARSED_BY_PG = new Set(['integer', 'smallint', 'real', 'double precision', 'json', 'jsonb', 'timestamp with time zone', 'integer[]', 'smallint[]']);

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

/**
 * Maps rows in place, and only the values pg did not already give in the column's type: a custom
 * column's (its fromDriver), a string where the column holds something else (a bigint's number), an
 * expression's with a `mapWith` decoder. Text, uuids, enums, calendar dates, booleans and what pg
 * parsed itself (integers, arrays, timestamps) pass as they are; with nothing to map there is no
 * mapper (a page of tasks comes back as pg built it).
 */
function rowMapper<R>(fields: Fields | undefined): ((raw: Record<string, unknown>) => R) | null {
  const decoders: [string, (v: unknown) => unknown][] = [];
  for (const [key, f] of Object.entries(fields ?? {})) {
    if (is(f, Column)) {
      if (f.dataType === 'custom') decoders.push([key, (v) => f.mapFromDriverValue(v)]);
      else if (f.dataType !== 'string' && f.dataType !== 'boolean' && !PARSED_BY_PG.has(f.getSQLType()))
        decoders.push([key, (v) => (typeof v === 'string' ? f.mapFromDriverValue(v) : v)]);
    } else {
      // an expression's decoder is what `.mapWith()` gave it (drizzle keeps it off the public type)
      const decoder = (is(f, SQL) ? f : f.sql) as unknown as { decoder: typeof noopDecoder };
      if (decoder.decoder !== noopDecoder) decoders.push([key, (v) => decoder.decoder.mapFromDriverValue(v)]);
    }
  }
  if (decoders.length === 0) return null;
  return (raw) => {
    for (const [key, decode] of decoders) {
      const v = raw[key];
      if (v !== null && v !== undefined) raw[key] = decode(v);
    }
    return raw as R;
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
  /** each parameter: the placeholder it takes its value from (and how to encode it), or a value fixed in the template */
  private readonly slots: ({ name: string; encode?: (v: unknown) => unknown } | { value: unknown })[];
  /** null: pg's rows are already the statement's (no column or expression needs mapping) */
  private readonly map: ((raw: Record<string, unknown>) => R) | null;
  /** false: sent unnamed, so PostgreSQL plans it for the table as it is now at every run (see pool.ts) */
  private readonly prepare: boolean;
  private readonly types: typeof rawDates;

  /** `instants: 'iso'`: each `timestamptz` comes as its ISO string (see jsonStatement), not a Date */
  constructor(query: SQL, fields?: Fields, opts: { prepare?: boolean; instants?: 'date' | 'iso' } = {}) {
    this.prepare = opts.prepare ?? true;
    this.types = opts.instants === 'iso' ? isoInstants : rawDates;
    const q = dialect.sqlToQuery(query);
    this.text = q.sql;
    // what drizzle's fillPlaceholders finds out per run, found out once
    this.slots = q.params.map((p) => {
      if (is(p, Placeholder)) return { name: p.name };
      if (is(p, Param) && is(p.value, Placeholder)) {
        const encoder = p.encoder;
        return { name: p.value.name, encode: (v: unknown) => encoder.mapToDriverValue(v) };
      }
      return { value: p };
    });
    this.map = rowMapper<R>(fields);
  }

  /** The parameter values of one run. */
  private bind(values: Record<string, unknown>): unknown[] {
    return this.slots.map((s) => {
      if ('value' in s) return s.value;
      if (!(s.name in values)) throw new Error(`No value for placeholder "${s.name}" was provided`);
      return s.encode ? s.encode(values[s.name]) : values[s.name];
    });
  }

  /** Run it on `q` with the placeholders' values; the mapped rows and how many rows it touched. */
  async run(q: Queryable, values: Record<string, unknown> = {}): Promise<{ rows: R[]; rowCount: number }> {
    const config: pg.QueryConfig & { prepare?: false } = { text: this.text, values: this.bind(values), types: this.types };
    if (!this.prepare) config.prepare = false;
    const res = await q.query<Record<string, unknown>>(config);
    return { rows: this.map ? res.rows.map(this.map) : (res.rows as R[]), rowCount: res.rowCount ?? 0 };
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
 * A statement whose rows are already as JSON carries them (`jsonView` of the row, each instant as
 * its ISO string read straight from PostgreSQL's text): for rows that only go out in a reply, such
 * as a page of tasks, with no Date made and printed again per value.
 */
export function jsonStatement<F extends Fields>(query: SQL, fields: F): Statement<JsonView<RowOf<F>>> {
  return new Statement(query, fields, { instants: 'iso' });
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
  const out = { ...row } as Record<string, unknown>;
  for (const k in out) {
    const v = out[k];
    if (v instanceof Date) out[k] = isoString(v);
  }
  return out as JsonView<T>;
}
