import { randomUUID } from 'node:crypto';
import { AppError, type WebhookDelivery } from '@tasksvc/proto';
import { currentTraceparent, type Pool, type PoolClient } from '@tasksvc/runtime';

type Db = Pool | PoolClient;

export interface DeliveryRow {
  id: string;
  event_msg_id: string;
  endpoint_id: string;
  user_id: string;
  event: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  manual: boolean;
  max_attempts: number | null;
  next_attempt_at: Date;
  locked_until: Date | null;
  response_status: number | null;
  error: string | null;
  duration_ms: number | null;
  created_at: Date;
  last_attempt_at: Date | null;
  delivered_at: Date | null;
}

/** A leased delivery with everything needed to send it. */
export interface ClaimedDelivery {
  id: string;
  lease: string;
  attempts: number;
  manual: boolean;
  max_attempts: number | null;
  endpoint_id: string;
  user_id: string;
  event: string;
  url: string;
  secret_enc: string | null;
  body: string;
  /** trace context of the consumer that ingested the event (null with tracing off): the attempt joins that trace */
  traceparent: string | null;
}

export function deliveryView(r: DeliveryRow): WebhookDelivery {
  return {
    id: r.id,
    endpointId: r.endpoint_id,
    event: r.event as WebhookDelivery['event'],
    status: r.status,
    attempts: r.attempts,
    responseStatus: r.response_status,
    error: r.error,
    durationMs: r.duration_ms,
    createdAt: r.created_at.toISOString(),
    lastAttemptAt: r.last_attempt_at?.toISOString() ?? null,
    nextAttemptAt: r.status === 'pending' ? r.next_attempt_at.toISOString() : null,
    deliveredAt: r.delivered_at?.toISOString() ?? null,
  };
}

/**
 * Record one task event and one delivery per matching enabled endpoint of its owner. Idempotent:
 * a redelivered event (same message id) adds nothing, so each (event, endpoint) pair exists once.
 * The event keeps the active trace context (the consumer's span), for its delivery attempts.
 */
export async function ingestEvent(db: Db, e: { msgId: string; userId: string; event: string; body: string }): Promise<number> {
  // One statement (atomic by itself); an event no endpoint wants is not stored at all.
  const r = await db.query(
    `WITH eps AS (
       SELECT ep.id, ep.user_id FROM webhook.endpoints ep
        WHERE ep.user_id = $2 AND ep.enabled AND (cardinality(ep.events) = 0 OR $3 = ANY (ep.events))
     ), ev AS (
       INSERT INTO webhook.events (msg_id, user_id, event, body, traceparent) SELECT $1, $2, $3, $4, $5 WHERE EXISTS (SELECT 1 FROM eps)
       ON CONFLICT (msg_id) DO NOTHING
     )
     INSERT INTO webhook.deliveries (id, event_msg_id, endpoint_id, user_id, event)
     SELECT gen_random_uuid(), $1, eps.id, eps.user_id, $3 FROM eps
     ON CONFLICT (event_msg_id, endpoint_id) DO NOTHING`,
    [e.msgId, e.userId, e.event, e.body, currentTraceparent()],
  );
  return r.rowCount ?? 0;
}

const CLAIM_RETURNING = `
  SELECT c.id, c.lease, c.attempts, c.manual, c.max_attempts, c.endpoint_id, c.user_id, c.event, ep.url, ep.secret_enc, ev.body, ev.traceparent
    FROM claimed c JOIN webhook.endpoints ep ON ep.id = c.endpoint_id JOIN webhook.events ev ON ev.msg_id = c.event_msg_id`;

/**
 * Lease up to `limit` due deliveries (SKIP LOCKED: replicas never claim the same row). A lease that
 * expires (its worker died) makes the row due again. Each claim counts as an attempt.
 */
export async function claimDue(db: Db, limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
  const { rows } = await db.query<ClaimedDelivery>(
    `WITH claimed AS (
       UPDATE webhook.deliveries d
          SET locked_until = clock_timestamp() + $2 * interval '1 millisecond', lease = gen_random_uuid(), attempts = d.attempts + 1
        WHERE d.id IN (
          SELECT d2.id FROM webhook.deliveries d2 JOIN webhook.endpoints e ON e.id = d2.endpoint_id
           WHERE d2.status = 'pending' AND d2.next_attempt_at <= clock_timestamp()
             AND (d2.locked_until IS NULL OR d2.locked_until < clock_timestamp())
             AND (e.enabled OR d2.manual)
           ORDER BY d2.next_attempt_at
           LIMIT $1
           FOR UPDATE OF d2 SKIP LOCKED)
        RETURNING d.*)
     ${CLAIM_RETURNING}`,
    [limit, leaseMs],
  );
  return rows;
}

export interface Completion {
  id: string;
  lease: string;
  status: 'pending' | 'delivered' | 'failed';
  outcome: string;
  responseStatus: number | null;
  error: string | null;
  durationMs: number;
  startedAt: Date;
  /** for status pending: when to try again */
  nextAttemptAt: Date | null;
}

/**
 * Finish an attempt, but only while still holding the lease (a worker whose lease expired and was
 * reclaimed records nothing). The attempt is logged in the same statement. Returns false when the
 * lease was lost.
 */
export async function complete(db: Db, c: Completion, opts: { healthyEndpoint?: string } = {}): Promise<boolean> {
  // the hot path (a success) also clears the endpoint's failure streak in the same statement
  const healthy = opts.healthyEndpoint
    ? `, h AS (UPDATE webhook.endpoints SET failing_since = NULL WHERE id = $10 AND failing_since IS NOT NULL AND EXISTS (SELECT 1 FROM u))`
    : '';
  const r = await db.query(
    `WITH u AS (
       UPDATE webhook.deliveries
          SET status = $3, response_status = $4, error = $5, duration_ms = $6, last_attempt_at = $7,
              next_attempt_at = COALESCE($8, next_attempt_at),
              delivered_at = CASE WHEN $3 = 'delivered' THEN clock_timestamp() ELSE delivered_at END,
              locked_until = NULL, lease = NULL
        WHERE id = $1 AND lease = $2
        RETURNING id, attempts)${healthy}
     INSERT INTO webhook.attempts (delivery_id, attempt, started_at, outcome, response_status, error, duration_ms)
     SELECT id, attempts, $7, $9, $4, $5, $6 FROM u`,
    [c.id, c.lease, c.status, c.responseStatus, c.error?.slice(0, 500) ?? null, c.durationMs, c.startedAt, c.nextAttemptAt, c.outcome, ...(opts.healthyEndpoint ? [opts.healthyEndpoint] : [])],
  );
  return (r.rowCount ?? 0) > 0;
}

/** Start (or continue) the endpoint's failure streak; returns it with the owner and URL. */
export async function markFailing(db: Db, endpointId: string): Promise<{ failing_since: Date; enabled: boolean; user_id: string; url: string } | null> {
  const { rows } = await db.query<{ failing_since: Date; enabled: boolean; user_id: string; url: string }>(
    'UPDATE webhook.endpoints SET failing_since = COALESCE(failing_since, clock_timestamp()) WHERE id = $1 RETURNING failing_since, enabled, user_id, url',
    [endpointId],
  );
  return rows[0] ?? null;
}

/** Disable an enabled endpoint; true when this call did it (so the owner is told once). */
export async function disableEndpoint(db: Db, endpointId: string, reason: string): Promise<{ user_id: string; url: string } | null> {
  const { rows } = await db.query<{ user_id: string; url: string }>(
    'UPDATE webhook.endpoints SET enabled = false, disabled_reason = $2, updated_at = clock_timestamp() WHERE id = $1 AND enabled RETURNING user_id, url',
    [endpointId, reason],
  );
  return rows[0] ?? null;
}

export async function getDelivery(db: Db, userId: string, endpointId: string, id: string): Promise<DeliveryRow> {
  const row = (await db.query<DeliveryRow>('SELECT * FROM webhook.deliveries WHERE id = $1 AND endpoint_id = $2 AND user_id = $3', [id, endpointId, userId])).rows[0];
  if (!row) throw new AppError('NOT_FOUND', 'no such delivery');
  return row;
}

export async function listDeliveries(db: Db, userId: string, endpointId: string, limit: number): Promise<DeliveryRow[]> {
  return (
    await db.query<DeliveryRow>('SELECT * FROM webhook.deliveries WHERE endpoint_id = $1 AND user_id = $2 ORDER BY created_at DESC, id DESC LIMIT $3', [endpointId, userId, limit])
  ).rows;
}

/**
 * Send a logged delivery once more, now: same body, same delivery id, one more attempt. Returns it
 * leased to the caller (so the background worker cannot take it first), or null when it is in flight.
 */
export async function requeue(db: Db, userId: string, endpointId: string, id: string, leaseMs: number): Promise<ClaimedDelivery | null> {
  const { rows } = await db.query<ClaimedDelivery>(
    `WITH claimed AS (
       UPDATE webhook.deliveries
          SET status = 'pending', manual = true, max_attempts = attempts + 1, error = NULL, attempts = attempts + 1,
              lease = gen_random_uuid(), locked_until = clock_timestamp() + $4 * interval '1 millisecond'
        WHERE id = $1 AND endpoint_id = $2 AND user_id = $3 AND (locked_until IS NULL OR locked_until < clock_timestamp())
        RETURNING *)
     ${CLAIM_RETURNING}`,
    [id, endpointId, userId, leaseMs],
  );
  if (rows[0]) return rows[0];
  await getDelivery(db, userId, endpointId, id); // not found → 404; otherwise it is in flight already
  return null;
}

/** A synthetic event and its single manual delivery to one endpoint, leased to the caller. */
export async function insertTestDelivery(client: PoolClient, userId: string, endpointId: string, body: string, leaseMs: number): Promise<ClaimedDelivery> {
  const msgId = `test:${randomUUID()}`;
  await client.query('INSERT INTO webhook.events (msg_id, user_id, event, body) VALUES ($1, $2, $3, $4)', [msgId, userId, 'task.test', body]);
  const { rows } = await client.query<ClaimedDelivery>(
    `WITH claimed AS (
       INSERT INTO webhook.deliveries (id, event_msg_id, endpoint_id, user_id, event, manual, max_attempts, attempts, lease, locked_until)
       VALUES ($1, $2, $3, $4, 'task.test', true, 1, 1, gen_random_uuid(), clock_timestamp() + $5 * interval '1 millisecond')
       RETURNING *)
     ${CLAIM_RETURNING}`,
    [randomUUID(), msgId, endpointId, userId, leaseMs],
  );
  return rows[0]!;
}

/** Drop finished deliveries (and their events) older than the retention. */
export async function prune(db: Db, retentionDays: number): Promise<void> {
  await db.query(`DELETE FROM webhook.deliveries WHERE status <> 'pending' AND created_at < clock_timestamp() - $1 * interval '1 day'`, [retentionDays]);
  await db.query(
    `DELETE FROM webhook.events ev WHERE ev.received_at < clock_timestamp() - $1 * interval '1 day' AND NOT EXISTS (SELECT 1 FROM webhook.deliveries d WHERE d.event_msg_id = ev.msg_id)`,
    [retentionDays],
  );
}
