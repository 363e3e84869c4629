import { createHash } from 'node:crypto';
import pg from 'pg';
import type { Logger } from '../logger.ts';
import { gauge } from '../metrics.ts';
import { inSampledTrace, openSpan, tracingOn } from '../tracing.ts';
import { poolTypes } from './timestamps.ts';

/** Open pools by application name, for the usage gauges (read from pg-pool's counters on scrape, no query). */
const pools = new Set<{ name: string; pool: pg.Pool }>();
const poolGauge = (name: string, help: string, pick: (p: pg.Pool) => number) =>
  gauge(name, help, ['pool'], (g) => {
    g.reset();
    const sums = new Map<string, number>();
    for (const entry of pools) {
      if (entry.pool.ended) {
        pools.delete(entry);
        continue;
      }
      sums.set(entry.name, (sums.get(entry.name) ?? 0) + pick(entry.pool));
    }
    for (const [pool, v] of sums) g.set({ pool }, v);
  });
poolGauge('tasksvc_pg_pool_connections', 'PostgreSQL connections open in the pool (in use and idle).', (p) => p.totalCount);
poolGauge('tasksvc_pg_pool_idle_connections', 'PostgreSQL connections open but idle in the pool.', (p) => p.idleCount);
poolGauge('tasksvc_pg_pool_waiting_requests', 'Queries waiting for a free connection of the pool.', (p) => p.waitingCount);
poolGauge('tasksvc_pg_pool_max_connections', 'Size limit of the pool.', (p) => p.options.max ?? 10);

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;

/** Statement text → server-side prepared statement name; bounded so generated SQL cannot grow it without end. */
const statementNames = new Map<string, string>();
const MAX_NAMED_STATEMENTS = 5_000;

function statementName(text: string): string | undefined {
  let name = statementNames.get(text);
  if (name === undefined && statementNames.size < MAX_NAMED_STATEMENTS) {
    name = `ts_${createHash('sha1').update(text).digest('base64url')}`;
    statementNames.set(text, name);
  }
  return name;
}

/**
 * Every parameterised statement is prepared once per connection and then only bound and executed:
 * PostgreSQL skips parsing and planning on the hot paths (a task create's CTE costs most of its
 * time there). Statements without parameters (BEGIN, DDL) keep the simple protocol. Both forms are
 * covered: a text with values, and a query config (`{ text, values?, rowMode, types }`, what drizzle
 * and the runtime's statements pass) without a name of its own.
 *
 * A config with `prepare: false` goes unnamed. After five runs a prepared statement keeps a generic
 * plan, made for the table sizes of then: a join planned while a table was nearly empty stays a
 * sequential scan of it as it grows, until an ANALYZE (autovacuum's comes a minute or more later).
 */
class PreparingClient extends pg.Client {
  // pg's overloads cannot be restated here; the arguments pass through unchanged.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override query(config: any, values?: any, callback?: any): any {
    if (typeof config === 'string') {
      if (Array.isArray(values) && values.length > 0) {
        const name = statementName(config);
        if (name) return super.query({ text: config, values, name }, callback);
      }
    } else if (typeof config?.text === 'string' && !config.name && config.prepare !== false && typeof config.submit !== 'function') {
      const params: unknown = Array.isArray(values) ? values : config.values;
      if (Array.isArray(params) && params.length > 0) {
        const name = statementName(config.text);
        if (name) return super.query({ ...config, values: params, name }, typeof values === 'function' ? values : callback);
      }
    }
    return super.query(config, values, callback);
  }
}

/** Statement text kept on a span; longer ones (generated IN lists) are cut. */
const MAX_SPAN_STATEMENT = 2_000;

/**
 * With tracing on, every statement run inside a trace is a CLIENT span (`SELECT tasks`, `WITH`…)
 * carrying the parameterised text, never the values. Statements outside a sampled trace (pollers,
 * the relay's own bookkeeping, requests not sampled) open none. Both of pg's forms are covered: the
 * promise and the callback (pg-pool's `pool.query` uses the callback).
 */
function tracingClient(Base: typeof pg.Client, database: string): typeof pg.Client {
  return class TracingClient extends Base {
    // pg's overloads cannot be restated here; the arguments pass through unchanged.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    override query(config: any, values?: any, callback?: any): any {
      const text: unknown = typeof config === 'string' ? config : config?.text;
      // a Submittable (cursor, stream) manages its own lifecycle: not traced
      const span =
        typeof text === 'string' && typeof config?.submit !== 'function' && inSampledTrace()
          ? openSpan(spanName(text), 'client', { 'db.system.name': 'postgresql', 'db.namespace': database, 'db.query.text': text.slice(0, MAX_SPAN_STATEMENT) })
          : undefined;
      if (!span) return super.query(config, values, callback);
      const cb = typeof values === 'function' ? values : callback;
      if (typeof cb === 'function') {
        const done = (err: unknown, res: unknown) => {
          span.end(err ?? undefined);
          cb(err, res);
        };
        return typeof values === 'function' ? super.query(config, done) : super.query(config, values, done);
      }
      const result = super.query(config, values) as Promise<unknown>;
      result.then(
        () => span.end(),
        (err: unknown) => span.end(err),
      );
      return result;
    }
  };
}

/** `SELECT`, `WITH`, `INSERT tasks.outbox`…: the statement's verb, and the table of a simple write (a bounded name). */
export function spanName(text: string): string {
  const m = /^\s*(\w+)(?:\s+(?:(?:INTO|FROM)\s+)?("?\w+"?(?:\."?\w+"?)?))?/i.exec(text);
  if (!m) return 'SQL';
  const verb = m[1]!.toUpperCase();
  return ['INSERT', 'UPDATE', 'DELETE'].includes(verb) && m[2] ? `${verb} ${m[2].replaceAll('"', '')}` : verb;
}

/**
 * A connection pool that survives the database going away: idle-client errors are logged instead
 * of crashing the process, and new connections are attempted on the next query.
 */
export function createPool(
  url: string,
  log: Logger,
  opts: { max?: number; application?: string; connectTimeoutMs?: number; /** default true (see PreparingClient) */ prepare?: boolean } = {},
): pg.Pool {
  const application = opts.application ?? 'task-service';
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.max ?? 10,
    connectionTimeoutMillis: opts.connectTimeoutMs ?? 5_000,
    idleTimeoutMillis: 30_000,
    application_name: application,
    types: poolTypes,
    Client: client(opts.prepare !== false, url),
  });
  pool.on('error', (err) => log.warn({ err: err.message }, 'idle database connection lost'));
  pools.add({ name: application, pool });
  // pg-pool listens for errors only on idle clients; a checked-out client whose server goes away
  // (e.g. held across a bus publish) would otherwise emit an unhandled 'error' and kill the process.
  // Its pending query still rejects, and the pool discards the broken client on release.
  pool.on('connect', (client) => {
    client.on('error', (err) => log.warn({ err: err.message }, 'database connection lost while in use'));
  });
  return pool;
}

/** The pool's client class: preparing (default) and, with tracing on (checked once per pool), traced. */
function client(prepare: boolean, url: string): typeof pg.Client {
  const base = prepare ? PreparingClient : pg.Client;
  return tracingOn() ? tracingClient(base, new URL(url).pathname.slice(1)) : base;
}

/** What runs once the transaction open on a client (inTransaction) has committed. */
const onCommit = new WeakMap<pg.PoolClient | pg.Pool, (() => void)[]>();

/**
 * Run `fn` once what was just written on `q` is committed: after its inTransaction commits (never
 * after a rollback), or now when `q` is not in one (a pool's statement commits by itself).
 */
export function afterCommit(q: pg.PoolClient | pg.Pool, fn: () => void): void {
  const waiting = onCommit.get(q);
  if (waiting) waiting.push(fn);
  else fn();
}

/** Run `fn` in a transaction; rolls back on any throw. */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  const committed: (() => void)[] = [];
  onCommit.set(client, committed);
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    onCommit.delete(client);
    for (const f of committed) f();
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    onCommit.delete(client);
    client.release();
  }
}
