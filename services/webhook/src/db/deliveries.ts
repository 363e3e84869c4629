import { randomUUID } from 'node:crypto';
import { AppError, type WebhookDelivery } from '@tasksvc/proto';
import type { Pool, PoolClient } from '@tasksvc/runtime';

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

export interface IngestedEvent {
  msgId: string;
  userId: string;
  event: string;
  body: string;
  /** the consumer's trace context (none when tracing is off), kept for the delivery attempts */
  traceparent?: string | null;
}

/**
 * Record task events and one delivery per matching enabled endpoint of each event's owner, in one
 * statement (atomic by itself) whatever the number of events. Idempotent: a redelivered event (same
 * message id) adds nothing, so each (event, endpoint) pair exists once. An event no endpoint wants
 * is not stored at all. Returns the deliveries added per event, in the order given. Each event keeps
 * its trace context, for its delivery attempts.
 */
export async function ingestEvents(db: Db, events: readonly IngestedEvent[]): Promise<number[]> {
  const { rows } = await db.query<{ msg_id: string; n: number }>(
    `WITH e AS (
       SELECT DISTINCT ON (msg_id) * FROM unnest($1::text[], $2::uuid[], $3::text[], $4::text[], $5::text[]) AS e(msg_id, user_id, event, body, traceparent)
     ), eps AS (
       SELECT e.msg_id, e.event, ep.id AS endpoint_id, ep.user_id FROM e JOIN webhook.endpoints ep
           ON ep.user_id = e.user_id AND ep.enabled AND (cardinality(ep.events) = 0 OR e.event = ANY (ep.events))
     ), ev AS (
       INSERT INTO webhook.events (msg_id, user_id, event, body, traceparent)
       SELECT e.msg_id, e.user_id, e.event, e.body, e.traceparent FROM e WHERE e.msg_id IN (SELECT msg_id FROM eps)
       ON CONFLICT (msg_id) DO NOTHING
     ), added AS (
       INSERT INTO webhook.deliveries (id, event_msg_id, endpoint_id, user_id, event)
       SELECT gen_random_uuid(), msg_id, endpoint_id, user_id, event FROM eps
       ON CONFLICT (event_msg_id, endpoint_id) DO NOTHING
       RETURNING event_msg_id
     )
     SELECT event_msg_id AS msg_id, count(*)::int AS n FROM added GROUP BY event_msg_id`,
    [events.map((e) => e.msgId), events.map((e) => e.userId), events.map((e) => e.event), events.map((e) => e.body), events.map((e) => e.traceparent ?? null)],
  );
  const added = new Map(rows.map((r) => [r.msg_id, r.n]));
  // a message id given twice counts once (the first), as a second ingest of it would
  const seen = new Set<string>();
  return events.map((e) => {
    if (seen.has(e.msgId)) return 0;
    seen.add(e.msgId);
    return added.get(e.msgId) ?? 0;
  });
}

/** One event: see ingestEvents. */
export async function ingestEvent(db: Db, e: IngestedEvent): Promise<number> {
  return (await ingestEvents(db, [e]))[0]!;
}

const CLAIM_RETURNING = `
  SELECT c.id, c.lease, c.attempts, c.manual, c.max_attempts, c.endpoint_id, c.user_id, c.event, ep.url, ep.secret_enc, ev.body, ev.traceparent
    FROM claimed c JOIN webhook.endpoints ep ON ep.id = c.endpoint_id JOIN webhook.events ev ON ev.msg_id = c.event_msg_id`;

/**
 * Lease up to `limit` due deliveries, at most `perEndpoint` of them for one endpoint and none for
 * the endpoints in `skipEndpoints` (SKIP LOCKED: replicas never claim the same row). A lease that
 * expires (its worker died) makes the row due again. Each claim counts as an attempt.
 */
export async function claimDue(db: Db, limit: number, leaseMs: number, opts: { perEndpoint?: number; skipEndpoints?: readonly string[] } = {}): Promise<ClaimedDelivery[]> {
  // The due rows are locked in a window a few times the limit (the oldest first); the per-endpoint
  // cap is applied to that window, so one endpoint's backlog cannot fill a claim by itself.
  const { rows } = await db.query<ClaimedDelivery>(
    `WITH claimed AS (
       UPDATE webhook.deliveries d
          SET locked_until = clock_timestamp() + $2 * interval '1 millisecond', lease = gen_random_uuid(), attempts = d.attempts + 1
        WHERE d.id IN (
          SELECT w.id FROM (
            SELECT c.id, c.next_attempt_at, row_number() OVER (PARTITION BY c.endpoint_id ORDER BY c.next_attempt_at) AS n FROM (
              SELECT d2.id, d2.endpoint_id, d2.next_attempt_at FROM webhook.deliveries d2 JOIN webhook.endpoints e ON e.id = d2.endpoint_id
               WHERE d2.status = 'pending' AND d2.next_attempt_at <= clock_timestamp()
                 AND (d2.locked_until IS NULL OR d2.locked_until < clock_timestamp())
                 AND (e.enabled OR d2.manual)
                 AND d2.endpoint_id <> ALL ($3::uuid[])
               ORDER BY d2.next_attempt_at
               LIMIT $1 * 4
               FOR UPDATE OF d2 SKIP LOCKED) c
          ) w
          WHERE w.n <= $4
          ORDER BY w.next_attempt_at
          LIMIT $1)
        RETURNING d.*)
     ${CLAIM_RETURNING}`,
    [limit, leaseMs, opts.skipEndpoints ?? [], opts.perEndpoint ?? limit],
  );
  return rows;
}

/**
 * Give claimed deliveries back unattempted (a worker stopping, or a row whose lease would run out
 * before its turn): due again at once, and the claim's attempt count undone. Only while the lease
 * is still this worker's.
 */
export async function release(db: Db, rows: readonly Pick<ClaimedDelivery, 'id' | 'lease'>[]): Promise<void> {
  await db.query(
    `UPDATE webhook.deliveries d SET locked_until = NULL, lease = NULL, attempts = d.attempts - 1
       FROM unnest($1::uuid[], $2::uuid[]) AS r(id, lease) WHERE d.id = r.id AND d.lease = r.lease`,
    [rows.map((r) => r.id), rows.map((r) => r.lease)],
  );
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
  /** a success that clears this endpoint's failure streak */
  healthyEndpoint?: string | null;
}

/**
 * Finish attempts, each only while its lease is still held (a worker whose lease expired and was
 * reclaimed records nothing). One statement for any number of attempts: the outcome, the attempt
 * log and, for successes, the endpoint's health. Returns, per completion, whether it was recorded
 * (false when the lease was lost).
 */
export async function completeMany(db: Db, cs: readonly Completion[]): Promise<boolean[]> {
  const { rows } = await db.query<{ id: string }>(
    `WITH c AS (
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::int[], $5::text[], $6::int[], $7::timestamptz[], $8::timestamptz[], $9::text[], $10::uuid[])
         AS c(id, lease, status, response_status, error, duration_ms, started_at, next_attempt_at, outcome, healthy_endpoint)
     ), u AS (
       UPDATE webhook.deliveries d
          SET status = c.status, response_status = c.response_status, error = c.error, duration_ms = c.duration_ms, last_attempt_at = c.started_at,
              next_attempt_at = COALESCE(c.next_attempt_at, d.next_attempt_at),
              delivered_at = CASE WHEN c.status = 'delivered' THEN clock_timestamp() ELSE d.delivered_at END,
              locked_until = NULL, lease = NULL
         FROM c
        WHERE d.id = c.id AND d.lease = c.lease
        RETURNING d.id, d.attempts, c.started_at, c.outcome, c.response_status, c.error, c.duration_ms, c.healthy_endpoint
     ), h AS (
       UPDATE webhook.endpoints SET failing_since = NULL
        WHERE id IN (SELECT healthy_endpoint FROM u WHERE healthy_endpoint IS NOT NULL) AND failing_since IS NOT NULL
     )
     INSERT INTO webhook.attempts (delivery_id, attempt, started_at, outcome, response_status, error, duration_ms)
     SELECT id, attempts, started_at, outcome, response_status, error, duration_ms FROM u
     RETURNING delivery_id AS id`,
    [
      cs.map((c) => c.id),
      cs.map((c) => c.lease),
      cs.map((c) => c.status),
      cs.map((c) => c.responseStatus),
      cs.map((c) => c.error?.slice(0, 500) ?? null),
      cs.map((c) => c.durationMs),
      cs.map((c) => c.startedAt),
      cs.map((c) => c.nextAttemptAt),
      cs.map((c) => c.outcome),
      cs.map((c) => c.healthyEndpoint ?? null),
    ],
  );
  const recorded = new Set(rows.map((r) => r.id));
  return cs.map((c) => recorded.has(c.id));
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
