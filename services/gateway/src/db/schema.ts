import { bytea } from '@tasksvc/runtime/db/columns.ts';
import { index, integer, jsonb, pgSchema, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core';

/**
 * The gateway's tables (schema `gateway`), declared once: row types are inferred from here and
 * migrations generated from it (docs/architecture.md, Data layer).
 */
export const gateway = pgSchema('gateway');

/** Per-user write rate limits shared by every gateway replica: one counter per user, bucket and one-minute window. */
export const rateLimits = gateway.table(
  'rate_limits',
  {
    userId: uuid().notNull(),
    /** the route's bus subject */
    bucket: text().notNull(),
    windowStart: timestamp({ withTimezone: true }).notNull(),
    hits: integer().notNull(),
  },
  (t) => [primaryKey({ name: 'rate_limits_pkey', columns: [t.userId, t.bucket, t.windowStart] }), index('rate_limits_window').on(t.windowStart)],
);

/**
 * Answers to writes sent with an `Idempotency-Key` (docs/api.md), per user and key for 24 hours: a
 * retry with the same key gets the stored answer instead of running the write again. `status` is
 * null while the first request runs.
 */
export const idempotencyKeys = gateway.table(
  'idempotency_keys',
  {
    userId: uuid().notNull(),
    key: text().notNull(),
    /** SHA-256 of method, path and body: the same key with another request is refused */
    fingerprint: text().notNull(),
    status: integer(),
    contentType: text(),
    /** a raw reply's own headers (JSON replies have none) */
    headers: jsonb().$type<Record<string, string>>(),
    body: bytea(),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ name: 'idempotency_keys_pkey', columns: [t.userId, t.key] }), index('idempotency_keys_created').on(t.createdAt)],
);
