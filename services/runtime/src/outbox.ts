import { randomUUID } from 'node:crypto';
import type { EventDef } from '@tasksvc/proto';
import type pg from 'pg';
import type { Bus } from './bus/types.ts';
import type { Logger } from './logger.ts';

/**
 * Transactional outbox. A service writes its state change and the event it causes in one
 * transaction (`enqueueEvent` on the same client); the relay publishes committed rows to the bus
 * with the row id as message id (so a re-publish after a crash is deduplicated) and marks them.
 *
 * The owning service's migration creates the table:
 *   CREATE TABLE outbox (id uuid PRIMARY KEY, subject text NOT NULL, payload jsonb NOT NULL,
 *     created_at timestamptz NOT NULL DEFAULT clock_timestamp(), published_at timestamptz, attempts int NOT NULL DEFAULT 0, last_error text);
 *   CREATE INDEX outbox_pending ON outbox (created_at) WHERE published_at IS NULL;
 */
export async function enqueueEvent<T>(client: pg.PoolClient | pg.Pool, schema: string, event: EventDef<T>, payload: T): Promise<string> {
  const row = outboxRow(event, payload);
  await client.query(`INSERT INTO "${schema}".outbox (id, subject, payload) VALUES ($1, $2, $3)`, [row.id, row.subject, row.payload]);
  return row.id;
}

/** The checked values of one outbox row, for a caller that writes it within a statement of its own (a CTE). */
export function outboxRow<T>(event: EventDef<T>, payload: T): { id: string; subject: string; payload: string } {
  event.schema.parse(payload);
  return { id: randomUUID(), subject: event.subject, payload: JSON.stringify(payload) };
}

export interface OutboxRelay {
  /** publish now rather than at the next poll (call after a commit) */
  kick(): void;
  /** publish everything pending; resolves with how many rows were published */
  flush(): Promise<number>;
  stop(): Promise<void>;
}

export function startOutboxRelay(opts: {
  pool: pg.Pool;
  bus: Bus;
  schema: string;
  events: EventDef<unknown>[];
  log: Logger;
  pollMs?: number;
  batch?: number;
}): OutboxRelay {
  const { pool, bus, schema, log } = opts;
  const bySubject = new Map(opts.events.map((e) => [e.subject, e]));
  const batch = opts.batch ?? 200;
  let stopped = false;
  let running: Promise<number> | undefined;
  let again = false;
  let timer: NodeJS.Timeout | undefined;

  const lockKey = `outbox:${schema}`;
  const once = async (): Promise<number> => {
    const client = await pool.connect();
    let broken = false;
    try {
      // One relay per schema at a time across replicas keeps the order and never publishes a row twice
      // at once. A session lock rather than a transaction: publishing may run consumers (in-process
      // bus), and those must never run inside a transaction of ours.
      await client.query('SELECT pg_advisory_lock(hashtext($1))', [lockKey]);
      try {
        const { rows } = await client.query<{ id: string; subject: string; payload: unknown }>(
          `SELECT id, subject, payload FROM "${schema}".outbox WHERE published_at IS NULL ORDER BY created_at, id LIMIT $1`,
          [batch],
        );
        const done: string[] = [];
        for (const row of rows) {
          const event = bySubject.get(row.subject);
          try {
            if (!event) throw new Error(`no event definition for ${row.subject}`);
            await bus.publish(event, row.payload, row.id);
            done.push(row.id);
          } catch (err) {
            await client.query(`UPDATE "${schema}".outbox SET attempts = attempts + 1, last_error = $2 WHERE id = $1`, [row.id, String((err as Error).message).slice(0, 500)]);
            log.warn({ err: (err as Error).message, outboxId: row.id }, 'outbox publish failed; will retry');
            break; // keep order: retry from this row next round
          }
        }
        // One statement marks the whole round; a crash before it re-publishes these rows (same msgIds, deduplicated).
        if (done.length > 0) await client.query(`UPDATE "${schema}".outbox SET published_at = clock_timestamp(), attempts = attempts + 1 WHERE id = ANY($1::uuid[])`, [done]);
        return done.length;
      } finally {
        await client.query('SELECT pg_advisory_unlock(hashtext($1))', [lockKey]);
      }
    } catch (err) {
      broken = true; // never hand back a connection that may still hold the lock
      throw err;
    } finally {
      client.release(broken);
    }
  };

  const drain = async (): Promise<number> => {
    let total = 0;
    for (;;) {
      const n = await once();
      total += n;
      if (n < batch) return total;
    }
  };

  const run = (): Promise<number> => {
    if (running) {
      again = true;
      return running;
    }
    running = drain()
      .catch((err: unknown) => {
        log.warn({ err: (err as Error).message }, 'outbox relay round failed');
        return 0;
      })
      .finally(() => {
        running = undefined;
        if (again && !stopped) {
          again = false;
          void run();
        }
      });
    return running;
  };

  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      void run().finally(schedule);
    }, opts.pollMs ?? 500);
  };
  schedule();

  return {
    kick() {
      if (!stopped) void run();
    },
    async flush() {
      if (running) await running;
      return run();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      if (running) await running;
    },
  };
}
