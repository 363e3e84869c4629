import { randomUUID } from 'node:crypto';
import type { EventDef, OutboxFigures } from '@tasksvc/proto';
import type pg from 'pg';
import type { Bus } from './bus/types.ts';
import { afterCommit } from './db/pool.ts';
import type { Logger } from './logger.ts';
import { gauge } from './metrics.ts';
import { continueTrace, currentTraceparent, detached } from './tracing.ts';

/** The outboxes whose relays run in this process, for the backlog gauges (one query per schema per scrape). */
const relayed = new Map<string, pg.Pool>();
/** Each relay running in this process by schema: a committed outbox row kicks it (enqueueEvent). */
const kicks = new Map<string, Set<() => void>>();
/** A scrape never waits longer than this for the backlog query; a schema that does not answer is left out. */
const BACKLOG_QUERY_MS = 2_000;

interface Backlog {
  pending: number;
  oldest: number;
}

/** Pending rows and the age of the oldest one, per relayed schema; shared by both gauges of one scrape. */
let backlogs: Promise<Map<string, Backlog>> | undefined;
function readBacklogs(): Promise<Map<string, Backlog>> {
  backlogs ??= (async () => {
    const out = new Map<string, Backlog>();
    await Promise.all(
      [...relayed].map(async ([schema, pool]) => {
        let timer: NodeJS.Timeout | undefined;
        try {
          const { rows } = await Promise.race([
            pool.query<{ pending: string; oldest: number | null }>(
              `SELECT count(*) AS pending, extract(epoch FROM clock_timestamp() - min(created_at))::float8 AS oldest FROM "${schema}".outbox WHERE published_at IS NULL`,
            ),
            new Promise<never>((_, reject) => {
              timer = setTimeout(() => reject(new Error('timeout')), BACKLOG_QUERY_MS);
            }),
          ]);
          out.set(schema, { pending: Number(rows[0]?.pending ?? 0), oldest: Math.max(0, rows[0]?.oldest ?? 0) });
        } catch {
          // the database is unreachable: no figure rather than a wrong one
        } finally {
          clearTimeout(timer);
        }
      }),
    );
    return out;
  })().finally(() => setTimeout(() => (backlogs = undefined), 0));
  return backlogs;
}

const backlogGauge = (name: string, help: string, pick: (b: Backlog) => number) =>
  gauge(name, help, ['schema'], async (g) => {
    const all = await readBacklogs();
    g.reset();
    for (const [schema, b] of all) g.set({ schema }, pick(b));
  });
const pendingGauge = backlogGauge('tasksvc_outbox_pending_events', 'Outbox rows not yet published, per schema (collected on scrape).', (b) => b.pending);
const oldestGauge = backlogGauge('tasksvc_outbox_oldest_pending_age_seconds', 'Age of the oldest unpublished outbox row, per schema: the relay lag (0 when none is pending).', (b) => b.oldest);

/** The backlog gauges' values for these schemas (one read of each, as a scrape does); a schema not relayed here, or whose database did not answer, is left out. */
export async function outboxFigures(schemas: readonly string[]): Promise<OutboxFigures[]> {
  const [pending, oldest] = await Promise.all([pendingGauge.get(), oldestGauge.get()]);
  const of = (values: typeof pending.values, schema: string) => values.find((v) => v.labels.schema === schema)?.value;
  return schemas.flatMap((schema) => {
    const p = of(pending.values, schema);
    return p === undefined ? [] : [{ schema, pending: p, oldestPendingSeconds: of(oldest.values, schema) ?? 0 }];
  });
}

/**
 * Transactional outbox. A service writes its state change and the event it causes in one
 * transaction (`enqueueEvent` on the same client); the relay publishes committed rows to the bus
 * with the row id as message id (so a re-publish after a crash is deduplicated) and marks them, and
 * deletes published rows after OUTBOX_RETENTION_DAYS (hourly), the same for every service.
 *
 * The table is the runtime's: a service names its outbox schemas in `ServiceDefinition.migrations`
 * and `migrate` creates them with `outboxTableSql` after the service's own files.
 *
 * `traceparent` is the W3C trace context of the work that wrote the row (null when tracing is off):
 * the relay publishes the row inside that trace, so the consumers' spans join the request's trace.
 */
/**
 * The one definition of an outbox table, for `schema`. Idempotent (IF NOT EXISTS), so a database
 * whose service migrations created the same table before the runtime did keeps it as it is; run
 * under the schema's migration lock (`migrate`), as concurrent CREATE IF NOT EXISTS can collide.
 */
export function outboxTableSql(schema: string): string {
  return `CREATE SCHEMA IF NOT EXISTS "${schema}";
CREATE TABLE IF NOT EXISTS "${schema}".outbox (
  id uuid PRIMARY KEY,
  subject text NOT NULL,
  payload jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  published_at timestamptz,
  attempts integer NOT NULL DEFAULT 0,
  last_error text,
  traceparent text
);
-- tables made before tracing existed
ALTER TABLE "${schema}".outbox ADD COLUMN IF NOT EXISTS traceparent text;
-- Rows are inserted in bursts (a cron bucket: up to hundreds of thousands) and marked published
-- moments later; until vacuum removes the dead entries, every relay scan of outbox_pending steps over
-- them from the oldest on, so the scan cost grew with the burst. Vacuum every few thousand changes.
ALTER TABLE "${schema}".outbox SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000, autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 5000);
CREATE INDEX IF NOT EXISTS outbox_pending ON "${schema}".outbox (created_at) WHERE published_at IS NULL;`;
}

/**
 * Write an event into the schema's outbox on `client` (in the caller's transaction). Once it commits
 * (inTransaction), this process's relay of the schema is kicked: the event leaves at once without
 * each caller kicking, and the relay's poll is only the fallback for what no kick announced.
 */
export async function enqueueEvent<T>(client: pg.PoolClient | pg.Pool, schema: string, event: EventDef<T>, payload: T): Promise<string> {
  const row = outboxRow(event, payload);
  await client.query(`INSERT INTO "${schema}".outbox (id, subject, payload, traceparent) VALUES ($1, $2, $3, $4)`, [row.id, row.subject, row.payload, row.traceparent]);
  outboxWritten(client, schema);
  return row.id;
}

/**
 * A statement of the caller's wrote outbox rows of `schema` on `client` (an outboxRow in a CTE): kick
 * this process's relay of the schema once it commits, as enqueueEvent does.
 */
export function outboxWritten(client: pg.PoolClient | pg.Pool, schema: string): void {
  afterCommit(client, () => kicks.get(schema)?.forEach((kick) => kick()));
}

export interface OutboxRowValues {
  id: string;
  subject: string;
  payload: string;
  traceparent: string | null;
}

/** The checked values of one outbox row, for a caller that writes it within a statement of its own (a CTE). */
export function outboxRow<T>(event: EventDef<T>, payload: T): OutboxRowValues {
  event.schema.parse(payload);
  return { id: randomUUID(), subject: event.subject, payload: JSON.stringify(payload), traceparent: currentTraceparent() };
}

export interface OutboxRelay {
  /** publish soon rather than at the next poll (call after a commit): at once, unless a round is running or began less than `minRoundGapMs` ago, then right after */
  kick(): void;
  /** publish everything pending; resolves with how many rows were published */
  flush(): Promise<number>;
  /** delete rows published longer ago than the retention; resolves with how many */
  prune(): Promise<number>;
  stop(): Promise<void>;
}

/** One rule for every outbox: published rows are kept this long (for looking into what was sent), then deleted. */
export const OUTBOX_RETENTION_DAYS = 7;
const PRUNE_EVERY_MS = 3_600_000;
/**
 * How often a relay looks for rows no kick announced while none waits. Every committed outbox row
 * kicks its relay (enqueueEvent, or the writer's own kick), so this bounds only what a replica that
 * died between its commit and its round leaves: published by another replica at most 15 s later (a
 * restarted replica publishes it at once: its first poll is at start). At 500 ms the five relays of
 * an idle system asked PostgreSQL 10 questions a second; at 5 s they were still the most frequent JS
 * wake-up of an idle service (tools/bench/idle.ts). Kept under the pool's idleTimeoutMillis (30 s),
 * so the poll's connection is reused rather than opened anew (a backend fork and an authentication)
 * each time.
 */
export const IDLE_POLL_MS = 15_000;
const PRUNE_BATCH = 10_000;

export function startOutboxRelay(opts: {
  pool: pg.Pool;
  bus: Bus;
  schema: string;
  events: EventDef<unknown>[];
  log: Logger;
  /** the poll while rows wait (a round failed, the bus away): default 500 ms */
  pollMs?: number;
  /** the poll while none waits (default IDLE_POLL_MS, never shorter than pollMs) */
  idlePollMs?: number;
  batch?: number;
  /** a kicked round starts no sooner than this after the previous one started (default 25 ms) */
  minRoundGapMs?: number;
  /**
   * false: a row is deleted once published rather than kept OUTBOX_RETENTION_DAYS (the auth service's
   * account deletions: keeping them would keep the id of someone who asked to be forgotten)
   */
  keepPublished?: boolean;
}): OutboxRelay {
  const { pool, bus, schema, log } = opts;
  const keepPublished = opts.keepPublished ?? true;
  const bySubject = new Map(opts.events.map((e) => [e.subject, e]));
  const batch = opts.batch ?? 200;
  let stopped = false;
  let running: Promise<number> | undefined;
  let again = false;
  let timer: NodeJS.Timeout | undefined;
  // A round costs four statements however few rows it carries, and over NATS leaves as few JetStream
  // messages as its subjects allow (event-batch.ts), each taken and acknowledged by every consumer.
  // Under a steady stream of commits, rounds back to back carried a handful of rows each and were most
  // of the statements per event; started at most every `minRoundGapMs`, each takes what came in
  // meanwhile. 25 ms rather than 10: a create cost 12–16 % less CPU across the system under load (both
  // gaps in the same interleaved rounds of tools/bench/gc.ts), for at most 25 ms more between commit
  // and consumers. An event after a quiet moment still goes at once.
  const minRoundGapMs = opts.minRoundGapMs ?? 25;
  let lastRound = -Infinity;
  let deferred: NodeJS.Timeout | undefined;

  relayed.set(schema, pool);
  const lockKey = `outbox:${schema}`;
  const unlock = (client: pg.PoolClient) => client.query('SELECT pg_advisory_unlock(hashtext($1))', [lockKey]);
  /**
   * The lock and its connection, kept for `minRoundGapMs` after a round that published rows. Replicas
   * share the schema's outbox, and each one's commits kick its own relay: with the lock let go after
   * every round, two replicas under load ran twice the rounds of one (each round took the rows of both,
   * and the other's round, waiting on the lock, ran right after it with what came in meanwhile), so
   * twice the relay statements and half-filled JetStream messages per event (tools/bench/replica-probe.ts:
   * 0.067-0.101 rounds per create instead of 0.036-0.063). Held, the lock makes the busy relay the one
   * that publishes for all: another replica's kick finds it taken (pg_try_advisory_lock) and tries
   * again a gap later, by when the holder's next round has taken its rows or the holder let go (at most
   * two gaps later than alone). The next round of the holder reuses the connection and the lock.
   */
  let held: { client: pg.PoolClient; timer: NodeJS.Timeout } | undefined;
  /** the held lock being let go: a round of ours waits for it rather than find its own lock taken */
  let lettingGo: Promise<void> | undefined;
  const letGo = async (): Promise<void> => {
    const h = held;
    if (!h) return lettingGo;
    held = undefined;
    clearTimeout(h.timer);
    lettingGo = unlock(h.client).then(
      () => h.client.release(),
      () => h.client.release(true), // never hand back a connection that may still hold the lock
    );
    await lettingGo;
    lettingGo = undefined;
  };

  /** One round; 'busy': another relay (replica) holds the lock and `wait` was false. */
  const once = async (wait: boolean): Promise<number | 'busy'> => {
    let client: pg.PoolClient;
    if (held) {
      client = held.client;
      clearTimeout(held.timer);
      held = undefined;
    } else {
      await lettingGo;
      client = await pool.connect();
      try {
        // One relay per schema at a time across replicas keeps the order and never publishes a row twice
        // at once. A session lock rather than a transaction: publishing may run consumers (in-process
        // bus), and those must never run inside a transaction of ours.
        if (wait) await client.query('SELECT pg_advisory_lock(hashtext($1))', [lockKey]);
        else if (!(await client.query<{ got: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS got', [lockKey])).rows[0]!.got) {
          client.release();
          return 'busy';
        }
      } catch (err) {
        client.release(true);
        throw err;
      }
    }
    let broken = false;
    let keep = false;
    try {
      const { rows } = await client.query<{ id: string; subject: string; payload: unknown; traceparent: string | null }>(
        `SELECT id, subject, payload, traceparent FROM "${schema}".outbox WHERE published_at IS NULL ORDER BY created_at, id LIMIT $1`,
        [batch],
      );
      // The whole round is published at once, in order: over NATS the publishes share one connection
      // and their acknowledgements are awaited together (JetStream stores them in the order sent); in
      // process the consumers get the round together and can batch their writes. A row that fails is
      // retried next round, after rows of this round that succeeded.
      const outcomes = await Promise.allSettled(
        rows.map((row) => {
          const event = bySubject.get(row.subject);
          if (!event) return Promise.reject(new Error(`no event definition for ${row.subject}`));
          return continueTrace(row.traceparent, () => bus.publish(event, row.payload, row.id));
        }),
      );
      const done: string[] = [];
      const failed: { id: string; error: string }[] = [];
      outcomes.forEach((o, i) => {
        if (o.status === 'fulfilled') done.push(rows[i]!.id);
        else failed.push({ id: rows[i]!.id, error: String((o.reason as Error)?.message ?? o.reason).slice(0, 500) });
      });
      if (failed.length > 0) {
        await client.query(`UPDATE "${schema}".outbox o SET attempts = attempts + 1, last_error = f.error FROM unnest($1::uuid[], $2::text[]) AS f(id, error) WHERE o.id = f.id`, [
          failed.map((f) => f.id),
          failed.map((f) => f.error),
        ]);
        log.warn({ err: failed[0]!.error, outboxIds: failed.slice(0, 10).map((f) => f.id), failed: failed.length }, 'outbox publish failed; will retry');
      }
      // One statement marks the whole round (or deletes it: keepPublished false); a crash before it re-publishes these rows (same msgIds, deduplicated).
      if (done.length > 0 && keepPublished) await client.query(`UPDATE "${schema}".outbox SET published_at = clock_timestamp(), attempts = attempts + 1 WHERE id = ANY($1::uuid[])`, [done]);
      else if (done.length > 0) await client.query(`DELETE FROM "${schema}".outbox WHERE id = ANY($1::uuid[])`, [done]);
      // a round with rows is one of a busy moment: keep the lock for the next (see held)
      keep = done.length > 0 && !stopped;
      return done.length;
    } catch (err) {
      broken = true; // never hand back a connection that may still hold the lock
      throw err;
    } finally {
      if (broken) client.release(true);
      else if (keep) {
        const timer = setTimeout(() => void letGo(), minRoundGapMs);
        timer.unref();
        held = { client, timer };
      } else {
        await unlock(client).then(
          () => client.release(),
          (err: unknown) => {
            client.release(true);
            throw err;
          },
        );
      }
    }
  };

  /** rounds until one takes less than a batch; 'busy' when the first found the lock held elsewhere */
  const drain = async (wait: boolean): Promise<number | 'busy'> => {
    let total = 0;
    for (;;) {
      const n = await once(wait);
      if (n === 'busy') return total > 0 ? total : 'busy';
      total += n;
      if (n < batch) return total;
    }
  };

  const run = (wait = false): Promise<number> => {
    if (running) {
      again = true;
      return running;
    }
    clearTimeout(deferred);
    deferred = undefined;
    lastRound = performance.now();
    // a round is nobody's request: without this, the rounds a request kicked (and every poll timer
    // scheduled from them) would stay in that request's trace
    running = detached(() => drain(wait))
      .then((n) => {
        // another replica's relay holds the lock: its next round takes our rows, else ours a gap later
        if (n !== 'busy') return n;
        again = true;
        return 0;
      })
      .catch((err: unknown) => {
        log.warn({ err: (err as Error).message }, 'outbox relay round failed');
        return 0;
      })
      .finally(() => {
        running = undefined;
        if (again && !stopped) {
          again = false;
          soon();
        }
      });
    return running;
  };

  /** a round now, or when the gap since the last one allows (see minRoundGapMs) */
  const soon = () => {
    if (running) {
      again = true;
      return;
    }
    if (deferred) return;
    const wait = lastRound + minRoundGapMs - performance.now();
    if (wait <= 0) void run();
    else deferred = setTimeout(() => void run(), wait);
  };

  // In batches, so a backlog of months never holds one long delete; replicas pruning at once only wait for each other.
  const prune = async (): Promise<number> => {
    let total = 0;
    for (;;) {
      const { rowCount } = await pool.query(
        `DELETE FROM "${schema}".outbox WHERE id IN (SELECT id FROM "${schema}".outbox WHERE published_at < now() - make_interval(days => $1) LIMIT $2)`,
        [OUTBOX_RETENTION_DAYS, PRUNE_BATCH],
      );
      total += rowCount ?? 0;
      if ((rowCount ?? 0) < PRUNE_BATCH) return total;
    }
  };
  const pruner = setInterval(() => {
    prune().catch((err: unknown) => log.warn({ err: (err as Error).message, schema }, 'outbox pruning failed; next try in an hour'));
  }, PRUNE_EVERY_MS);
  pruner.unref();

  // The timer is the fallback for rows no kick announced: a replica that died between commit and
  // relay, a round that failed (the bus away), a transaction not run by inTransaction. A poll first
  // asks one indexed question on any pooled connection; only when a row waits does it pay for a round
  // (connection, lock, select, unlock). While rows wait it polls every pollMs; when none did at the
  // last look, every idlePollMs (see IDLE_POLL_MS).
  const anyPending = async (): Promise<boolean> => {
    const { rowCount } = await pool.query(`SELECT 1 FROM "${schema}".outbox WHERE published_at IS NULL LIMIT 1`);
    return (rowCount ?? 0) > 0;
  };
  const pollMs = opts.pollMs ?? 500;
  const idlePollMs = Math.max(pollMs, opts.idlePollMs ?? IDLE_POLL_MS);
  let waiting = true; // at start: rows may have been left by a previous run
  const poll = async (): Promise<void> => {
    waiting = await anyPending().catch(() => true); // a failed check: let the round find out and log
    if (waiting && !stopped) await run();
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(
      () => {
        void poll().finally(schedule);
      },
      waiting ? pollMs : idlePollMs,
    );
  };
  schedule();
  const kick = () => {
    if (!stopped) soon();
  };
  if (!kicks.has(schema)) kicks.set(schema, new Set());
  kicks.get(schema)!.add(kick);

  return {
    kick,
    async flush() {
      if (running) await running;
      return run(true);
    },
    prune,
    async stop() {
      stopped = true;
      if (relayed.get(schema) === pool) relayed.delete(schema);
      kicks.get(schema)?.delete(kick);
      clearTimeout(timer);
      clearTimeout(deferred);
      clearInterval(pruner);
      if (running) await running;
      await letGo();
    },
  };
}
