import { randomUUID } from 'node:crypto';
import { deadLettersRpc, replayDeadLettersRpc, type DeadLettersReply, type EventDef, type ParkedEvent, type ReplayReply, type ServiceName } from '@tasksvc/proto';
import type pg from 'pg';
import { readEvent } from './bus/envelope.ts';
import type { Bus, EventMeta, Subscription, UnreadableEvent } from './bus/types.ts';
import type { Logger } from './logger.ts';
import { counter, gauge } from './metrics.ts';

/**
 * Parked events (dead letters). An event that fails its consumer's schema, even read tolerantly
 * (contracts.ts), is never dropped: both transports hand it to the consuming service's
 * `dead_letters` table (`ConsumeOptions.park`), acknowledge it there, and count it. The admin page
 * lists the table (`svc.<name>.dead-letters`); a replay hands the events to the consumer again —
 * by itself when a service starts (an upgraded consumer reads what its predecessor could not), or
 * from the admin page. Handlers are idempotent on the event id, so a replay that overlaps a
 * redelivery does no harm.
 *
 * The table is the runtime's, like the outbox: one per consuming service, in its own schema, created
 * by `migrate` (`deadLetterTableSql`) for a service that declares durables.
 */
export function deadLetterTableSql(schema: string): string {
  return `CREATE TABLE IF NOT EXISTS "${schema}".dead_letters (
  id uuid PRIMARY KEY,
  durable text NOT NULL,
  subject text NOT NULL,
  msg_id text NOT NULL,
  -- the event's JSON as it arrived (text: kept byte for byte, whatever it holds)
  payload text NOT NULL,
  error text NOT NULL,
  attempts integer NOT NULL DEFAULT 1,
  parked_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  last_tried_at timestamptz,
  UNIQUE (durable, msg_id)
);`;
}

const parkedTotal = counter('tasksvc_bus_events_parked_total', 'Events a consumer could not read (they fail its schema) and parked in its dead-letter table, by subject and durable.', ['subject', 'durable']);
const replayedTotal = counter('tasksvc_bus_events_replayed_total', 'Parked events handed to their consumer again and handled, by durable.', ['durable']);

/** The dead-letter tables of this process, for the pending gauge (read on scrape). */
const tables = new Map<string, pg.Pool>();
gauge('tasksvc_bus_parked_events', 'Events waiting in a dead-letter table, by schema and durable (collected on scrape; 0 is the healthy value).', ['schema', 'durable'], async (g) => {
  g.reset();
  await Promise.all(
    [...tables].map(async ([schema, pool]) => {
      try {
        const { rows } = await pool.query<{ durable: string; n: string }>(`SELECT durable, count(*) AS n FROM "${schema}".dead_letters GROUP BY durable`);
        for (const r of rows) g.set({ schema, durable: r.durable }, Number(r.n));
      } catch {
        // the database is unreachable: no figure rather than a wrong one
      }
    }),
  );
});

type Handler = (payload: unknown, meta: EventMeta) => Promise<void>;

export interface DeadLetters {
  park(e: UnreadableEvent): Promise<void>;
  list(limit?: number): Promise<DeadLettersReply>;
  /** hand parked events (all, or those named) to their consumers again; those handled leave the table */
  replay(ids?: string[]): Promise<ReplayReply>;
  /** the bus a service uses: its consumers park what they cannot read here, and are remembered for replays */
  bus(bus: Bus): Bus;
  /** answer the admin page's list and replay requests for this service */
  serve(bus: Bus): Subscription[];
  close(): void;
}

interface Row {
  id: string;
  durable: string;
  subject: string;
  msg_id: string;
  payload: string;
  error: string;
  attempts: number;
  parked_at: Date;
  last_tried_at: Date | null;
}

export function createDeadLetters(opts: { pool: pg.Pool; schema: string; service: ServiceName; log: Logger }): DeadLetters {
  const { pool, schema, service, log } = opts;
  const table = `"${schema}".dead_letters`;
  const consumers = new Map<string, { event: EventDef<unknown>; handler: Handler }>();
  tables.set(schema, pool);

  const park = async (e: UnreadableEvent) => {
    await pool.query(
      `INSERT INTO ${table} (id, durable, subject, msg_id, payload, error) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (durable, msg_id) DO UPDATE SET attempts = ${table}.attempts + 1, error = EXCLUDED.error, last_tried_at = clock_timestamp()`,
      [randomUUID(), e.durable, e.subject, e.msgId, JSON.stringify(e.data ?? null), e.error.slice(0, 2_000)],
    );
    parkedTotal.inc({ subject: e.subject, durable: e.durable });
    log.error({ durable: e.durable, subject: e.subject, msgId: e.msgId, error: e.error }, 'event fails its schema: parked in the dead-letter table (replay it from the admin page once the consumer is upgraded)');
  };

  const replay = async (ids?: string[]): Promise<ReplayReply> => {
    const { rows } = await pool.query<Row>(
      `SELECT * FROM ${table} WHERE durable = ANY($1::text[]) ${ids ? 'AND id = ANY($2::uuid[])' : ''} ORDER BY parked_at LIMIT 1000`,
      ids ? [[...consumers.keys()], ids] : [[...consumers.keys()]],
    );
    let replayed = 0;
    const stillParked: ReplayReply['stillParked'] = [];
    for (const row of rows) {
      const consumer = consumers.get(row.durable)!;
      let error: string | undefined;
      const parsed = readEvent(consumer.event, JSON.parse(row.payload));
      if (!parsed.ok) error = parsed.error;
      else {
        try {
          await consumer.handler(parsed.data, { msgId: row.msg_id, subject: row.subject, deliveryCount: row.attempts + 1 });
        } catch (err) {
          error = `the consumer failed: ${(err as Error).message}`;
        }
      }
      if (error === undefined) {
        await pool.query(`DELETE FROM ${table} WHERE id = $1`, [row.id]);
        replayedTotal.inc({ durable: row.durable });
        replayed++;
      } else {
        await pool.query(`UPDATE ${table} SET attempts = attempts + 1, error = $2, last_tried_at = clock_timestamp() WHERE id = $1`, [row.id, error.slice(0, 2_000)]);
        stillParked.push({ id: row.id, error });
      }
    }
    if (rows.length > 0) log.info({ replayed, stillParked: stillParked.length }, 'parked events replayed');
    return { service, replayed, stillParked };
  };

  const list = async (limit = 100): Promise<DeadLettersReply> => {
    const [{ rows }, count] = await Promise.all([
      pool.query<Row>(`SELECT id, durable, subject, msg_id, error, attempts, parked_at, last_tried_at FROM ${table} ORDER BY parked_at LIMIT $1`, [limit]),
      pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`),
    ]);
    const events: ParkedEvent[] = rows.map((r) => ({
      id: r.id,
      durable: r.durable,
      subject: r.subject,
      msgId: r.msg_id,
      error: r.error,
      attempts: r.attempts,
      parkedAt: r.parked_at.toISOString(),
      lastTriedAt: r.last_tried_at?.toISOString() ?? null,
    }));
    return { service, total: Number(count.rows[0]?.n ?? 0), events };
  };

  return {
    park,
    list,
    replay,
    bus(bus: Bus): Bus {
      return {
        ...bus,
        consume(event, handler, co) {
          if (!consumers.has(co.durable)) consumers.set(co.durable, { event: event, handler: handler as Handler });
          return bus.consume(event, handler, { park, ...co });
        },
      };
    },
    serve(bus: Bus): Subscription[] {
      return [bus.serve(deadLettersRpc(service), async (req) => list(req.limit)), bus.serve(replayDeadLettersRpc(service), async (req) => replay(req.ids))];
    },
    close() {
      if (tables.get(schema) === pool) tables.delete(schema);
    },
  };
}
