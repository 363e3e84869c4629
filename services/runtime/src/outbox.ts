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
  const id = randomUUID();
  event.schema.parse(payload);
  await client.query(`INSERT INTO "${schema}".outbox (id, subject, payload) VALUES ($1, $2, $3)`, [id, event.subject, JSON.stringify(payload)]);
  return id;
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

  const once = async (): Promise<number> => {
    const client = await pool.connect();
    let published = 0;
    try {
      await client.query('BEGIN');
      // SKIP LOCKED lets several replicas relay in parallel without publishing a row twice at once.
      const { rows } = await client.query<{ id: string; subject: string; payload: unknown }>(
        `SELECT id, subject, payload FROM "${schema}".outbox WHERE published_at IS NULL ORDER BY created_at, id LIMIT $1 FOR UPDATE SKIP LOCKED`,
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
      // One statement marks the whole round (rows stay locked until COMMIT, so nobody re-publishes them).
      if (done.length > 0) {
        await client.query(`UPDATE "${schema}".outbox SET published_at = clock_timestamp(), attempts = attempts + 1 WHERE id = ANY($1::uuid[])`, [done]);
        published = done.length;
      }
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
    return published;
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
