import { randomUUID } from 'node:crypto';
import type { NotificationChannelType } from '@tasksvc/proto';
import { orm, type Queryable } from '@tasksvc/runtime';
import { and, asc, desc, eq, inArray, lt, notInArray, or, sql } from 'drizzle-orm';
import type { Scalar } from '../domain/channel-config.ts';
import { channels, deliveries, pushSubscriptions } from './schema.ts';

export type ChannelRow = typeof channels.$inferSelect;
export type PushSubscriptionRow = typeof pushSubscriptions.$inferSelect;

// ---- channels ----

export async function listChannels(q: Queryable, userId: string): Promise<ChannelRow[]> {
  return orm(q).select().from(channels).where(eq(channels.userId, userId));
}

export async function getChannel(q: Queryable, userId: string, type: NotificationChannelType): Promise<ChannelRow | null> {
  const [row] = await orm(q)
    .select()
    .from(channels)
    .where(and(eq(channels.userId, userId), eq(channels.type, type)));
  return row ?? null;
}

/** `confirmNonce`: e-mail's confirmation link that may still confirm it (replacing any earlier one; null: none). */
export async function upsertChannel(
  q: Queryable,
  userId: string,
  type: NotificationChannelType,
  v: { enabled: boolean; config: Record<string, Scalar>; secretsEnc: string | null; secretFields: string[]; confirmNonce?: string | null },
): Promise<ChannelRow> {
  const set = { enabled: v.enabled, config: v.config, secretsEnc: v.secretsEnc, secretFields: v.secretFields, ...(v.confirmNonce === undefined ? {} : { confirmNonce: v.confirmNonce }) };
  const [row] = await orm(q)
    .insert(channels)
    .values({ userId, type, ...set })
    .onConflictDoUpdate({ target: [channels.userId, channels.type], set: { ...set, updatedAt: sql`clock_timestamp()` } })
    .returning();
  return row!;
}

export async function deleteChannel(q: Queryable, userId: string, type: NotificationChannelType): Promise<boolean> {
  const db = orm(q);
  const r = await db.delete(channels).where(and(eq(channels.userId, userId), eq(channels.type, type)));
  if (type === 'push') {
    const p = await db.delete(pushSubscriptions).where(eq(pushSubscriptions.userId, userId));
    return (r.rowCount ?? 0) + (p.rowCount ?? 0) > 0;
  }
  return (r.rowCount ?? 0) > 0;
}

/**
 * What the confirmation link does: the e-mail channel whose pending link has this nonce takes its
 * current address as confirmed, and the link is spent. Null when no link with this nonce is pending
 * (used already, or replaced by a newer one for another address).
 */
export async function confirmEmailAddress(q: Queryable, userId: string, nonce: string): Promise<string | null> {
  const [row] = await orm(q)
    .update(channels)
    .set({ confirmedAddress: sql`${channels.config}->>'address'`, confirmNonce: null, updatedAt: sql`clock_timestamp()` })
    .where(and(eq(channels.userId, userId), eq(channels.type, 'email'), eq(channels.confirmNonce, nonce)))
    .returning({ address: channels.confirmedAddress });
  return row?.address ?? null;
}

// ---- push subscriptions ----

/** Devices per user: a new one beyond this replaces the user's oldest registration (#56.8). */
export const PUSH_DEVICES_PER_USER = 20;

/**
 * One row per (user, device endpoint): registering again refreshes the caller's own row only. Another
 * user who presents the same endpoint gets a separate row and never touches this one (#19.13).
 * Past PUSH_DEVICES_PER_USER the oldest registrations go, as a phone replaced long ago would.
 */
export async function upsertPushSubscription(q: Queryable, userId: string, s: { endpoint: string; p256dh: string; auth: string; userAgent: string | null }): Promise<PushSubscriptionRow> {
  const db = orm(q);
  const keys = { p256dh: s.p256dh, auth: s.auth, userAgent: s.userAgent };
  const [row] = await db
    .insert(pushSubscriptions)
    .values({ id: randomUUID(), userId, endpoint: s.endpoint, ...keys })
    .onConflictDoUpdate({ target: [pushSubscriptions.userId, pushSubscriptions.endpoint], set: keys })
    .returning();
  const newest = db
    .select({ id: pushSubscriptions.id })
    .from(pushSubscriptions)
    .where(eq(pushSubscriptions.userId, userId))
    .orderBy(desc(pushSubscriptions.createdAt), desc(pushSubscriptions.id))
    .limit(PUSH_DEVICES_PER_USER);
  await db.delete(pushSubscriptions).where(and(eq(pushSubscriptions.userId, userId), notInArray(pushSubscriptions.id, newest)));
  // subscribing a device turns browser push on unless the user switched it off
  await db.insert(channels).values({ userId, type: 'push', enabled: true }).onConflictDoNothing();
  return row!;
}

export async function deletePushSubscription(q: Queryable, userId: string, endpoint: string): Promise<boolean> {
  const r = await orm(q)
    .delete(pushSubscriptions)
    .where(and(eq(pushSubscriptions.userId, userId), eq(pushSubscriptions.endpoint, endpoint)));
  return (r.rowCount ?? 0) > 0;
}

export async function removePushSubscriptionById(q: Queryable, id: string): Promise<void> {
  await orm(q).delete(pushSubscriptions).where(eq(pushSubscriptions.id, id));
}

export async function listPushSubscriptions(q: Queryable, userId: string): Promise<PushSubscriptionRow[]> {
  return orm(q).select().from(pushSubscriptions).where(eq(pushSubscriptions.userId, userId)).orderBy(asc(pushSubscriptions.createdAt));
}

// ---- deliveries (the dedupe key and the history) ----

export type Claim = { kind: 'claimed'; id: string; attempts: number } | { kind: 'done' } | { kind: 'busy' };

const LEASE_SECONDS = 120;

/**
 * Take the right to send one (notification, channel, target). The unique key makes it at most once:
 * a row already sent or given up is done; one being sent by someone else is busy until its lease ends.
 */
export async function claimDelivery(
  q: Queryable,
  d: { userId: string; dedupeKey: string; channel: NotificationChannelType; target: string; title: string; tag: string | null; test?: boolean },
): Promise<Claim> {
  const db = orm(q);
  const lease = sql`clock_timestamp() + ${LEASE_SECONDS} * interval '1 second'`;
  const [claimed] = await db
    .insert(deliveries)
    .values({ id: randomUUID(), userId: d.userId, dedupeKey: d.dedupeKey, channel: d.channel, target: d.target, title: d.title, tag: d.tag, status: 'sending', attempts: 1, lockedUntil: lease, test: d.test ?? false })
    .onConflictDoUpdate({
      target: [deliveries.dedupeKey, deliveries.channel, deliveries.target],
      set: { status: 'sending', attempts: sql`${deliveries.attempts} + 1`, lockedUntil: sql`excluded.locked_until`, updatedAt: sql`clock_timestamp()` },
      setWhere: or(eq(deliveries.status, 'retrying'), and(eq(deliveries.status, 'sending'), lt(deliveries.lockedUntil, sql`clock_timestamp()`))),
    })
    .returning({ id: deliveries.id, attempts: deliveries.attempts });
  if (claimed) return { kind: 'claimed', ...claimed };
  const [existing] = await db
    .select({ status: deliveries.status })
    .from(deliveries)
    .where(and(eq(deliveries.dedupeKey, d.dedupeKey), eq(deliveries.channel, d.channel), eq(deliveries.target, d.target)));
  return existing?.status === 'sending' ? { kind: 'busy' } : { kind: 'done' };
}

export async function finishDelivery(q: Queryable, id: string, status: 'sent' | 'retrying' | 'failed', error: string | null): Promise<void> {
  await orm(q)
    .update(deliveries)
    .set({ status, error: error?.slice(0, 500) ?? null, lockedUntil: null, updatedAt: sql`clock_timestamp()` })
    .where(eq(deliveries.id, id));
}

/** The user's latest deliveries, as the history lists them. */
export async function history(q: Queryable, userId: string, limit = 50) {
  const d = deliveries;
  return orm(q)
    .select({ id: d.id, channel: d.channel, title: d.title, tag: d.tag, status: d.status, attempts: d.attempts, error: d.error, test: d.test, createdAt: d.createdAt, updatedAt: d.updatedAt })
    .from(deliveries).where(eq(deliveries.userId, userId)).orderBy(desc(deliveries.updatedAt), asc(deliveries.id)).limit(limit);
}

/** Every delivery the user has on record (the log keeps 30 days), oldest first: the export's notification log. */
export async function notificationLog(q: Queryable, userId: string) {
  const d = deliveries;
  return orm(q)
    .select({ channel: d.channel, title: d.title, tag: d.tag, status: d.status, attempts: d.attempts, error: d.error, test: d.test, createdAt: d.createdAt })
    .from(deliveries).where(eq(deliveries.userId, userId)).orderBy(asc(deliveries.createdAt), asc(deliveries.id));
}

/** Keep the dedupe keys for 30 days (redeliveries come far sooner), then drop them. */
export async function pruneDeliveries(q: Queryable): Promise<void> {
  await orm(q)
    .delete(deliveries)
    .where(and(lt(deliveries.updatedAt, sql`clock_timestamp() - interval '30 days'`), inArray(deliveries.status, ['sent', 'failed'])));
}
