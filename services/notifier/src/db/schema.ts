import { sql } from 'drizzle-orm';
import { boolean, check, index, integer, jsonb, pgSchema, primaryKey, text, timestamp, unique, uuid } from 'drizzle-orm/pg-core';
import { NOTIFICATION_CHANNEL_TYPES } from '@tasksvc/proto/notify.ts';
import { oneOf } from '@tasksvc/runtime/db/columns.ts';
import type { Scalar } from '../domain/channel-config.ts';

/**
 * The notifier's tables (schema `notifier`), declared once: row and insert types are inferred from
 * here, and migrations are generated from it (docs/architecture.md, Data layer).
 */
export const notifier = pgSchema('notifier');

const now = sql`clock_timestamp()`;
const DELIVERY_STATUSES = ['sending', 'sent', 'retrying', 'failed'] as const;

/** Per-user notification channels; secrets sealed under SECRETS_KEYRING (runtime keyring.ts). */
export const channels = notifier.table(
  'channels',
  {
    userId: uuid().notNull(),
    type: text({ enum: NOTIFICATION_CHANNEL_TYPES }).notNull(),
    enabled: boolean().notNull().default(true),
    /** non-secret settings (server, topic, chat id, address, url…) */
    config: jsonb().$type<Record<string, Scalar>>().notNull().default({}),
    /** secret settings as JSON, sealed (`kr1:<key id>:iv:tag:ciphertext`) */
    secretsEnc: text(),
    /** names of the stored secrets, so settings can show has… flags without decrypting */
    secretFields: text().array().notNull().default(sql`'{}'::text[]`),
    /** e-mail: the address its owner confirmed by the mailed link; mail goes only while it is config.address (issue 56 #2) */
    confirmedAddress: text(),
    /** e-mail: the nonce of the one confirmation link that still works (domain/confirm-links.ts) */
    confirmNonce: text(),
    updatedAt: timestamp({ withTimezone: true }).notNull().default(now),
  },
  (t) => [
    primaryKey({ name: 'channels_pkey', columns: [t.userId, t.type] }),
    check('channels_type_check', oneOf('type', NOTIFICATION_CHANNEL_TYPES)),
  ],
);

/** Browser push subscriptions, one per (user, device endpoint). */
export const pushSubscriptions = notifier.table(
  'push_subscriptions',
  {
    id: uuid().primaryKey(),
    userId: uuid().notNull(),
    endpoint: text().notNull(),
    p256dh: text().notNull(),
    auth: text().notNull(),
    userAgent: text(),
    createdAt: timestamp({ withTimezone: true }).notNull().default(now),
  },
  (t) => [index('push_subscriptions_user').on(t.userId), unique('push_subscriptions_user_endpoint_key').on(t.userId, t.endpoint)],
);

/** The delivery log: its unique (dedupe_key, channel, target) makes each notification go out at most once per channel. */
export const deliveries = notifier.table(
  'deliveries',
  {
    id: uuid().primaryKey(),
    userId: uuid().notNull(),
    dedupeKey: text().notNull(),
    channel: text({ enum: NOTIFICATION_CHANNEL_TYPES }).notNull(),
    /** 'default', or the push subscription id */
    target: text().notNull(),
    title: text().notNull(),
    tag: text(),
    status: text({ enum: DELIVERY_STATUSES }).notNull(),
    attempts: integer().notNull().default(0),
    lockedUntil: timestamp({ withTimezone: true }),
    error: text(),
    test: boolean().notNull().default(false),
    createdAt: timestamp({ withTimezone: true }).notNull().default(now),
    updatedAt: timestamp({ withTimezone: true }).notNull().default(now),
  },
  (t) => [
    index('deliveries_user').on(t.userId, t.updatedAt.desc().nullsFirst()),
    unique('deliveries_dedupe_key_channel_target_key').on(t.dedupeKey, t.channel, t.target),
    check('deliveries_status_check', oneOf('status', DELIVERY_STATUSES)),
  ],
);
