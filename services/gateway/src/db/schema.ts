import { index, integer, pgSchema, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core';

/**
 * The gateway's one table (schema `gateway`), declared once: row types are inferred from here and
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
