import { sql } from 'drizzle-orm';
import { boolean, check, foreignKey, index, integer, pgSchema, primaryKey, text, timestamp, unique, uuid } from 'drizzle-orm/pg-core';
import { oneOf } from '@tasksvc/runtime/db/columns.ts';

/**
 * The webhook service's tables (schema `webhook`), declared once: row and insert types are inferred
 * from here, and migrations are generated from it (docs/architecture.md, Data layer). Deliveries are
 * leased (locked_until + lease) so any number of replicas can work.
 */
export const webhook = pgSchema('webhook');

const now = sql`clock_timestamp()`;
export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;

/** Task-event endpoints; the signing secret sealed under SECRETS_KEYRING (runtime keyring.ts: `kr1:<key id>:iv:tag:ciphertext`). */
export const endpoints = webhook.table(
  'endpoints',
  {
    id: uuid().primaryKey(),
    userId: uuid().notNull(),
    url: text().notNull(),
    secretEnc: text(),
    /** the events it receives; empty: all */
    events: text().array().notNull().default(sql`'{}'::text[]`),
    enabled: boolean().notNull().default(true),
    disabledReason: text(),
    failingSince: timestamp({ withTimezone: true }),
    createdAt: timestamp({ withTimezone: true }).notNull().default(now),
    updatedAt: timestamp({ withTimezone: true }).notNull().default(now),
  },
  (t) => [index('endpoints_user').on(t.userId, t.createdAt)],
);

/** Each task event once, with the exact JSON body every delivery of it sends (and signs). */
export const events = webhook.table('events', {
  /** the bus message id (the producer's outbox id); `test:<uuid>` for synthetic test events */
  msgId: text().primaryKey(),
  userId: uuid().notNull(),
  event: text().notNull(),
  body: text().notNull(),
  receivedAt: timestamp({ withTimezone: true }).notNull().default(now),
  /** the W3C traceparent of the consumer that ingested it (null with tracing off): each attempt joins that trace */
  traceparent: text(),
});

/** One delivery per (event, endpoint). */
export const deliveries = webhook.table(
  'deliveries',
  {
    id: uuid().primaryKey(),
    eventMsgId: text().notNull(),
    endpointId: uuid().notNull(),
    userId: uuid().notNull(),
    event: text().notNull(),
    status: text({ enum: DELIVERY_STATUSES }).notNull().default('pending'),
    attempts: integer().notNull().default(0),
    /** test sends and manual redeliveries: one attempt, even to a disabled endpoint, no effect on its health */
    manual: boolean().notNull().default(false),
    maxAttempts: integer(),
    nextAttemptAt: timestamp({ withTimezone: true }).notNull().default(now),
    lockedUntil: timestamp({ withTimezone: true }),
    lease: uuid(),
    responseStatus: integer(),
    error: text(),
    durationMs: integer(),
    createdAt: timestamp({ withTimezone: true }).notNull().default(now),
    lastAttemptAt: timestamp({ withTimezone: true }),
    deliveredAt: timestamp({ withTimezone: true }),
  },
  (t) => [
    foreignKey({ name: 'deliveries_event_msg_id_fkey', columns: [t.eventMsgId], foreignColumns: [events.msgId] }).onDelete('cascade'),
    foreignKey({ name: 'deliveries_endpoint_id_fkey', columns: [t.endpointId], foreignColumns: [endpoints.id] }).onDelete('cascade'),
    unique('deliveries_event_msg_id_endpoint_id_key').on(t.eventMsgId, t.endpointId),
    // the claim walks the endpoints with due rows and reads each one's rows in due order (deliveries.ts, claimDue)
    index('deliveries_due_by_endpoint').on(t.endpointId, t.nextAttemptAt).where(sql`status = 'pending'`),
    index('deliveries_endpoint').on(t.endpointId, t.createdAt.desc().nullsFirst()),
    check('deliveries_status_check', oneOf('status', DELIVERY_STATUSES)),
  ],
);

/** Every attempt of a delivery. */
export const attempts = webhook.table(
  'attempts',
  {
    deliveryId: uuid().notNull(),
    attempt: integer().notNull(),
    startedAt: timestamp({ withTimezone: true }).notNull(),
    outcome: text().notNull(),
    responseStatus: integer(),
    error: text(),
    durationMs: integer().notNull(),
  },
  (t) => [
    primaryKey({ name: 'attempts_pkey', columns: [t.deliveryId, t.attempt] }),
    foreignKey({ name: 'attempts_delivery_id_fkey', columns: [t.deliveryId], foreignColumns: [deliveries.id] }).onDelete('cascade'),
  ],
);
