import { randomUUID } from 'node:crypto';
import type { NotificationChannelType } from '@tasksvc/proto';
import type { Pool } from '@tasksvc/runtime';
import type { Scalar } from '../domain/channel-config.ts';

export interface ChannelRow {
  user_id: string;
  type: NotificationChannelType;
  enabled: boolean;
  config: Record<string, Scalar>;
  secrets_enc: string | null;
  secret_fields: string[];
  updated_at: Date;
}

export interface PushSubscriptionRow {
  id: string;
  user_id: string;
  endpoint: string;
  p256dh: string;
  auth: string;
  user_agent: string | null;
  created_at: Date;
}

export interface DeliveryRow {
  id: string;
  user_id: string;
  dedupe_key: string;
  channel: NotificationChannelType;
  target: string;
  title: string;
  tag: string | null;
  status: 'sending' | 'sent' | 'retrying' | 'failed';
  attempts: number;
  error: string | null;
  test: boolean;
  created_at: Date;
  updated_at: Date;
}

// ---- channels ----

export async function listChannels(pool: Pool, userId: string): Promise<ChannelRow[]> {
  return (await pool.query<ChannelRow>('SELECT * FROM notifier.channels WHERE user_id = $1', [userId])).rows;
}

export async function getChannel(pool: Pool, userId: string, type: NotificationChannelType): Promise<ChannelRow | null> {
  return (await pool.query<ChannelRow>('SELECT * FROM notifier.channels WHERE user_id = $1 AND type = $2', [userId, type])).rows[0] ?? null;
}

export async function upsertChannel(pool: Pool, userId: string, type: NotificationChannelType, v: { enabled: boolean; config: Record<string, Scalar>; secretsEnc: string | null; secretFields: string[] }): Promise<ChannelRow> {
  return (
    await pool.query<ChannelRow>(
      `INSERT INTO notifier.channels (user_id, type, enabled, config, secrets_enc, secret_fields) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (user_id, type) DO UPDATE
          SET enabled = EXCLUDED.enabled, config = EXCLUDED.config, secrets_enc = EXCLUDED.secrets_enc, secret_fields = EXCLUDED.secret_fields, updated_at = clock_timestamp()
       RETURNING *`,
      [userId, type, v.enabled, JSON.stringify(v.config), v.secretsEnc, v.secretFields],
    )
  ).rows[0]!;
}

export async function deleteChannel(pool: Pool, userId: string, type: NotificationChannelType): Promise<boolean> {
  const r = await pool.query('DELETE FROM notifier.channels WHERE user_id = $1 AND type = $2', [userId, type]);
  if (type === 'push') {
    const p = await pool.query('DELETE FROM notifier.push_subscriptions WHERE user_id = $1', [userId]);
    return (r.rowCount ?? 0) + (p.rowCount ?? 0) > 0;
  }
  return (r.rowCount ?? 0) > 0;
}

// ---- push subscriptions ----

/**
 * One row per (user, device endpoint): registering again refreshes the caller's own row only. Another
 * user who presents the same endpoint gets a separate row and never touches this one (#19.13).
 */
export async function upsertPushSubscription(pool: Pool, userId: string, s: { endpoint: string; p256dh: string; auth: string; userAgent: string | null }): Promise<PushSubscriptionRow> {
  const row = (
    await pool.query<PushSubscriptionRow>(
      `INSERT INTO notifier.push_subscriptions (id, user_id, endpoint, p256dh, auth, user_agent) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (user_id, endpoint) DO UPDATE SET p256dh = EXCLUDED.p256dh, auth = EXCLUDED.auth, user_agent = EXCLUDED.user_agent
       RETURNING *`,
      [randomUUID(), userId, s.endpoint, s.p256dh, s.auth, s.userAgent],
    )
  ).rows[0]!;
  // subscribing a device turns browser push on unless the user switched it off
  await pool.query(`INSERT INTO notifier.channels (user_id, type, enabled) VALUES ($1, 'push', true) ON CONFLICT DO NOTHING`, [userId]);
  return row;
}

export async function deletePushSubscription(pool: Pool, userId: string, endpoint: string): Promise<boolean> {
  return ((await pool.query('DELETE FROM notifier.push_subscriptions WHERE user_id = $1 AND endpoint = $2', [userId, endpoint])).rowCount ?? 0) > 0;
}

export async function removePushSubscriptionById(pool: Pool, id: string): Promise<void> {
  await pool.query('DELETE FROM notifier.push_subscriptions WHERE id = $1', [id]);
}

export async function listPushSubscriptions(pool: Pool, userId: string): Promise<PushSubscriptionRow[]> {
  return (await pool.query<PushSubscriptionRow>('SELECT * FROM notifier.push_subscriptions WHERE user_id = $1 ORDER BY created_at', [userId])).rows;
}

// ---- deliveries (the dedupe key and the history) ----

export type Claim = { kind: 'claimed'; id: string; attempts: number } | { kind: 'done' } | { kind: 'busy' };

const LEASE_SECONDS = 120;

/**
 * Take the right to send one (notification, channel, target). The unique key makes it at most once:
 * a row already sent or given up is done; one being sent by someone else is busy until its lease ends.
 */
export async function claimDelivery(
  pool: Pool,
  d: { userId: string; dedupeKey: string; channel: NotificationChannelType; target: string; title: string; tag: string | null; test?: boolean },
): Promise<Claim> {
  const { rows } = await pool.query<{ id: string; attempts: number }>(
    `INSERT INTO notifier.deliveries (id, user_id, dedupe_key, channel, target, title, tag, status, attempts, locked_until, test)
     VALUES ($1, $2, $3, $4, $5, $6, $7, 'sending', 1, clock_timestamp() + $8 * interval '1 second', $9)
     ON CONFLICT (dedupe_key, channel, target) DO UPDATE
        SET status = 'sending', attempts = deliveries.attempts + 1, locked_until = EXCLUDED.locked_until, updated_at = clock_timestamp()
      WHERE deliveries.status = 'retrying' OR (deliveries.status = 'sending' AND deliveries.locked_until < clock_timestamp())
     RETURNING id, attempts`,
    [randomUUID(), d.userId, d.dedupeKey, d.channel, d.target, d.title, d.tag, LEASE_SECONDS, d.test ?? false],
  );
  if (rows[0]) return { kind: 'claimed', id: rows[0].id, attempts: rows[0].attempts };
  const existing = (await pool.query<{ status: string }>('SELECT status FROM notifier.deliveries WHERE dedupe_key = $1 AND channel = $2 AND target = $3', [d.dedupeKey, d.channel, d.target])).rows[0];
  return existing?.status === 'sending' ? { kind: 'busy' } : { kind: 'done' };
}

export async function finishDelivery(pool: Pool, id: string, status: 'sent' | 'retrying' | 'failed', error: string | null): Promise<void> {
  await pool.query('UPDATE notifier.deliveries SET status = $2, error = $3, locked_until = NULL, updated_at = clock_timestamp() WHERE id = $1', [id, status, error?.slice(0, 500) ?? null]);
}

export async function history(pool: Pool, userId: string, limit = 50): Promise<DeliveryRow[]> {
  return (await pool.query<DeliveryRow>('SELECT * FROM notifier.deliveries WHERE user_id = $1 ORDER BY updated_at DESC, id LIMIT $2', [userId, limit])).rows;
}

/** Keep the dedupe keys for 30 days (redeliveries come far sooner), then drop them. */
export async function pruneDeliveries(pool: Pool): Promise<void> {
  await pool.query(`DELETE FROM notifier.deliveries WHERE updated_at < clock_timestamp() - interval '30 days' AND status IN ('sent', 'failed')`);
}
