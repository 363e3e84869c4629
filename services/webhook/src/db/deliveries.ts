import { randomUUID } from 'node:crypto';
import { AppError, type WebhookDelivery } from '@tasksvc/proto';
import { names, orm, selectList, statement, Statement, type Fields, type PoolClient, type Queryable, type RowOf } from '@tasksvc/runtime';
import { and, desc, eq, lt, ne, notExists, sql, type SQLWrapper } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import { attempts, deliveries, endpoints, events } from './schema.ts';

export type DeliveryRow = typeof deliveries.$inferSelect;

export function deliveryView(r: DeliveryRow): WebhookDelivery {
  return {
    id: r.id,
    endpointId: r.endpointId,
    event: r.event as WebhookDelivery['event'],
    status: r.status,
    attempts: r.attempts,
    responseStatus: r.responseStatus,
    error: r.error,
    durationMs: r.durationMs,
    createdAt: r.createdAt.toISOString(),
    lastAttemptAt: r.lastAttemptAt?.toISOString() ?? null,
    nextAttemptAt: r.status === 'pending' ? r.nextAttemptAt.toISOString() : null,
    deliveredAt: r.deliveredAt?.toISOString() ?? null,
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

const p = sql.placeholder;
// the aliases the statements below use (`${deliveries} d` in FROM, `${d.status}` for its columns)
const d = alias(deliveries, 'd');
const c = alias(deliveries, 'c');
const e = alias(endpoints, 'e');
const ep = alias(endpoints, 'ep');
const ev = alias(events, 'ev');
const was = alias(deliveries, 'was');

/**
 * The receiving host of an endpoint URL (its authority, host and port: URLs with credentials are
 * refused), lower-cased. Endpoints of many users on one receiver share its bound; split_part, not a
 * regular expression: the claim computes it for every row of its window.
 */
const hostOf = (url: SQLWrapper) => sql<string>`lower(split_part(${url}, '/', 3))`;

// The hosts come from the endpoints table, not from joining `added` to `eps`: PostgreSQL guesses one
// row for each CTE and compares every pair (60 events to 10 endpoints: 360,000 pairs, 90 ms of a
// statement that takes 23 ms with the pkey lookups, so the statement quadrupled with the batch).
const ingestStatement = statement<{ msg_id: string; n: number; hosts: string[] }>(
  sql`WITH e AS (
       SELECT DISTINCT ON (msg_id) * FROM json_to_recordset(${p('events')}::json) AS e(msg_id text, user_id uuid, event text, body text, traceparent text)
     ), eps AS (
       SELECT e.msg_id, e.event, ${ep.id} AS endpoint_id, ${ep.userId} AS user_id FROM e JOIN ${endpoints} ep
           ON ${ep.userId} = e.user_id AND ${ep.enabled} AND (cardinality(${ep.events}) = 0 OR e.event = ANY (${ep.events}))
     ), stored AS (
       INSERT INTO ${events} (${names(events.msgId, events.userId, events.event, events.body, events.traceparent)})
       SELECT e.msg_id, e.user_id, e.event, e.body, e.traceparent FROM e WHERE e.msg_id IN (SELECT msg_id FROM eps)
       ON CONFLICT (${names(events.msgId)}) DO NOTHING
     ), added AS (
       INSERT INTO ${deliveries} (${names(deliveries.id, deliveries.eventMsgId, deliveries.endpointId, deliveries.userId, deliveries.event)})
       SELECT gen_random_uuid(), msg_id, endpoint_id, user_id, event FROM eps
       ON CONFLICT (${names(deliveries.eventMsgId, deliveries.endpointId)}) DO NOTHING
       RETURNING ${deliveries.eventMsgId} AS msg_id, ${deliveries.endpointId} AS endpoint_id
     )
     SELECT msg_id, count(*)::int AS n, array_agg(DISTINCT ${hostOf(ep.url)}) AS hosts FROM added JOIN ${endpoints} ep ON ${ep.id} = added.endpoint_id GROUP BY msg_id`,
);

/** Which of these users have an enabled endpoint (the index on endpoints(user_id, …) answers it). */
const subscribersStatement = statement<{ user_id: string }>(
  sql`SELECT DISTINCT ${endpoints.userId} AS user_id FROM ${endpoints} WHERE ${endpoints.userId} = ANY (${p('users')}::uuid[]) AND ${endpoints.enabled}`,
);

/** From this many events on, ingestEvents first reads which of their owners have an endpoint. */
export const SUBSCRIBERS_FIRST_FROM = 8;

/** What ingesting one event added. */
export interface Ingested {
  /** deliveries */
  added: number;
  /** their receiving hosts (see hostOf), for the worker's wake-up */
  hosts: string[];
}

/**
 * Record task events and one delivery per matching enabled endpoint of each event's owner, in one
 * statement (atomic by itself) whatever the number of events; for SUBSCRIBERS_FIRST_FROM events or
 * more, after a read of which owners have an enabled endpoint (none: nothing more is sent).
 * Idempotent: a redelivered event (same message id) adds nothing, so each (event, endpoint) pair
 * exists once. An event no endpoint wants is not stored at all. Returns what each event added, in
 * the order given. Each event keeps its trace context, for its delivery attempts.
 */
export async function ingestEvents(q: Queryable, batch: readonly IngestedEvent[]): Promise<Ingested[]> {
  const none = (): Ingested => ({ added: 0, hosts: [] });
  let stored = batch;
  if (batch.length >= SUBSCRIBERS_FIRST_FROM) {
    // Most users have no webhook: asking which users do first sends a few ids, where the statement below
    // would have carried every event's body (most of the consumer's socket writes) for PostgreSQL to parse
    // and drop. For a few events the second round trip costs more than their bodies (latency at a steady rate).
    const { rows: subscribers } = await subscribersStatement.run(q, { users: [...new Set(batch.map((e) => e.userId))] });
    if (subscribers.length === 0) return batch.map(none);
    const wanted = new Set(subscribers.map((r) => r.user_id));
    // PostgreSQL writes a uuid in lower case; an event's id may come in either (the schema takes both)
    stored = batch.filter((e) => wanted.has(e.userId.toLowerCase()));
  }
  // one JSON text: pg would escape each body of an array parameter one by one
  const events = stored.map((e) => ({ msg_id: e.msgId, user_id: e.userId, event: e.event, body: e.body, traceparent: e.traceparent ?? null }));
  const { rows } = await ingestStatement.run(q, { events: JSON.stringify(events) });
  const byId = new Map(rows.map((r) => [r.msg_id, { added: r.n, hosts: r.hosts }]));
  // a message id given twice counts once (the first), as a second ingest of it would
  const seen = new Set<string>();
  return batch.map((e) => {
    const first = !seen.has(e.msgId);
    seen.add(e.msgId);
    return (first && byId.get(e.msgId)) || none();
  });
}

/** One event: see ingestEvents. */
export async function ingestEvent(q: Queryable, e: IngestedEvent): Promise<Ingested> {
  return (await ingestEvents(q, [e]))[0]!;
}

/** A leased delivery with everything needed to send it (`claimed`: the CTE of the rows just leased, with the deliveries' columns). */
const claimFields = {
  id: c.id,
  lease: sql<string>`${c.lease}`,
  attempts: c.attempts,
  manual: c.manual,
  maxAttempts: c.maxAttempts,
  endpointId: c.endpointId,
  userId: c.userId,
  event: c.event,
  url: ep.url,
  /** the receiving host (see hostOf): the worker bounds the requests in flight per host */
  host: hostOf(ep.url),
  secretEnc: ep.secretEnc,
  body: ev.body,
  /** trace context of the consumer that ingested the event (null with tracing off): the attempt joins that trace */
  traceparent: ev.traceparent,
};
export type ClaimedDelivery = RowOf<typeof claimFields>;
const claimReturning = (fields: Fields = claimFields) => sql`SELECT ${selectList(fields)}
    FROM claimed c JOIN ${endpoints} ep ON ${ep.id} = ${c.endpointId} JOIN ${events} ev ON ${ev.msgId} = ${c.eventMsgId}`;

/** Room left in the worker, by user or by receiving host: an entry of 0 gets nothing. */
export type Rooms = ReadonlyMap<string, number>;

const rooms = (name: string) => sql`unnest(${p(`${name}Keys`)}::text[], ${p(`${name}Rooms`)}::int[])`;
const claimedFields = {
  ...claimFields,
  /** the most rows of this user the claim could take: a user that got this many may have more due */
  share: sql<number>`c.share`,
};
export type ClaimedRow = RowOf<typeof claimedFields>;

/*
 * The claim, fair between users and bounded per receiving host, in one statement whose plan needs no
 * planner setting (a cost override such as enable_sort = off priced the plan at ~2×10¹⁰, so a server
 * with JIT compiled every claim: a core busy while idle; services/webhook/src/claim-jit.test.ts):
 *
 * - due_endpoints: the endpoints with a due row and their oldest due time, one descent of
 *   deliveries_due_by_endpoint each (a loose index scan; rows due later are passed over inside the
 *   index, and an endpoint's backlog is never walked);
 * - eps: those enabled whose user and receiving host have room in the worker;
 * - users, shares: the users, the oldest due first; each may take its room, but at most twice an
 *   even split of the claim (the rows are locked before they are ranked);
 * - cand: each endpoint's oldest due rows, unleased, locked SKIP LOCKED (replicas never share one):
 *   at most its host's room, and twice an even split of its user's share among the user's endpoints;
 * - picked: round-robin between users (a user's 1st row, then everyone's 2nd, …, oldest first within
 *   a turn), at most each host's room, at most `limit`.
 *
 * Every estimate is a handful of index descents: the plan costs tens, far under jit_above_cost.
 */
const claimStatement = statement(
  sql`WITH RECURSIVE due_endpoints(endpoint_id, due) AS (
       (SELECT ${d.endpointId}, ${d.nextAttemptAt} FROM ${deliveries} d WHERE ${d.status} = 'pending' AND ${d.nextAttemptAt} <= now()
         ORDER BY ${d.endpointId}, ${d.nextAttemptAt} LIMIT 1)
       UNION ALL
       SELECT n.endpoint_id, n.next_attempt_at FROM due_endpoints prev CROSS JOIN LATERAL (
         SELECT ${d.endpointId} AS endpoint_id, ${d.nextAttemptAt} AS next_attempt_at FROM ${deliveries} d
          WHERE ${d.status} = 'pending' AND ${d.endpointId} > prev.endpoint_id AND ${d.nextAttemptAt} <= now()
          ORDER BY ${d.endpointId}, ${d.nextAttemptAt} LIMIT 1) n
     ), eps AS (
       SELECT ${e.id} AS id, ${e.userId} AS user_id, x.host, de.due, COALESCE(ur.room, ${p('perUser')}) AS user_room, COALESCE(hr.room, ${p('perHost')}) AS host_room
         FROM due_endpoints de JOIN ${endpoints} e ON ${e.id} = de.endpoint_id
         CROSS JOIN LATERAL (SELECT ${hostOf(e.url)} AS host) x
         LEFT JOIN ${rooms('user')} AS ur(user_id, room) ON ur.user_id = ${e.userId}::text
         LEFT JOIN ${rooms('host')} AS hr(host, room) ON hr.host = x.host
        WHERE ${e.enabled} AND COALESCE(ur.room, ${p('perUser')}) > 0 AND COALESCE(hr.room, ${p('perHost')}) > 0
     ), users AS (
       SELECT user_id, min(user_room) AS room, count(*) AS endpoints FROM eps GROUP BY user_id ORDER BY min(due) LIMIT ${p('limit')}
     ), shares AS (
       SELECT user_id, endpoints, least(room, ceil(${p('limit')} * 2.0 / count(*) OVER ())::int) AS share FROM users
     ), cand AS (
       SELECT s.user_id, s.share, eps.host, eps.host_room, w.id, w.next_attempt_at
         FROM shares s JOIN eps ON eps.user_id = s.user_id
         CROSS JOIN LATERAL (
           SELECT ${d.id} AS id, ${d.nextAttemptAt} AS next_attempt_at FROM ${deliveries} d
            WHERE ${d.status} = 'pending' AND ${d.endpointId} = eps.id AND ${d.nextAttemptAt} <= now()
              AND (${d.lockedUntil} IS NULL OR ${d.lockedUntil} < now())
            ORDER BY ${d.nextAttemptAt} LIMIT least(s.share, eps.host_room, ceil(s.share * 2.0 / s.endpoints)::int)
            FOR UPDATE SKIP LOCKED) w
     ), ranked AS (
       SELECT cand.*, row_number() OVER (PARTITION BY user_id ORDER BY next_attempt_at) AS turn FROM cand
     ), hosted AS (
       SELECT ranked.*, row_number() OVER (PARTITION BY host ORDER BY turn, next_attempt_at) AS n FROM ranked WHERE turn <= share
     ), picked AS (
       SELECT id, share FROM hosted WHERE n <= host_room ORDER BY turn, next_attempt_at LIMIT ${p('limit')}
     ), claimed AS (
       UPDATE ${deliveries} d
          SET ${names(deliveries.lockedUntil)} = clock_timestamp() + ${p('leaseMs')} * interval '1 millisecond', ${names(deliveries.lease)} = gen_random_uuid(),
              ${names(deliveries.attempts)} = ${d.attempts} + 1
         FROM picked WHERE ${d.id} = picked.id
        RETURNING d.*, picked.share)
     ${claimReturning(claimedFields)}`,
  claimedFields,
);

export interface ClaimRequest {
  /** rows at most */
  limit: number;
  leaseMs: number;
  /** rows a user the worker holds none of may take (its share of the worker) */
  perUser: number;
  /** room left of the users the worker holds rows of (0: none for them) */
  users?: Rooms;
  /** rows a receiving host not in `hosts` may take */
  perHost: number;
  /** room left of the hosts the worker holds rows of or has another budget for (0: none) */
  hosts?: Rooms;
}

/**
 * Lease due deliveries, fairly: round-robin between the users with due rows (oldest first), each
 * within its room, at most each receiving host's room, at most `limit` (SKIP LOCKED: replicas never
 * claim the same row). Deliveries of disabled endpoints wait (they go again when it is enabled). A
 * lease that expires (its worker died) makes the row due again. Each claim counts as an attempt.
 */
export async function claimDue(q: Queryable, r: ClaimRequest): Promise<ClaimedRow[]> {
  const users = [...(r.users ?? [])];
  const hosts = [...(r.hosts ?? [])];
  return (
    await claimStatement.run(q, {
      limit: r.limit,
      leaseMs: r.leaseMs,
      perUser: r.perUser,
      userKeys: users.map(([k]) => k),
      userRooms: users.map(([, n]) => Math.max(0, n)),
      perHost: r.perHost,
      hostKeys: hosts.map(([k]) => k),
      hostRooms: hosts.map(([, n]) => Math.max(0, n)),
    })
  ).rows;
}

const releaseStatement = statement(
  sql`UPDATE ${deliveries} d SET ${names(deliveries.lockedUntil)} = NULL, ${names(deliveries.lease)} = NULL, ${names(deliveries.attempts)} = ${d.attempts} - 1
       FROM unnest(${p('ids')}::uuid[], ${p('leases')}::uuid[]) AS r(id, lease) WHERE ${d.id} = r.id AND ${d.lease} = r.lease`,
);

/**
 * Give claimed deliveries back unattempted (a worker stopping, or a row whose lease would run out
 * before its turn): due again at once, and the claim's attempt count undone. Only while the lease
 * is still this worker's.
 */
export async function release(q: Queryable, rows: readonly Pick<ClaimedDelivery, 'id' | 'lease'>[]): Promise<void> {
  await releaseStatement.run(q, { ids: rows.map((r) => r.id), leases: rows.map((r) => r.lease) });
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
  /** a failure that starts (or continues) this endpoint's failure streak */
  failingEndpoint?: string | null;
}

/** What recording a completion did. */
export interface Recorded {
  /** false when the lease was lost (another worker has the row) */
  recorded: boolean;
  /** for a recorded failure: its endpoint's streak, enabled state, owner and URL */
  failing: { failingSince: Date; enabled: boolean; userId: string; url: string } | null;
}

// Unprepared: a generic plan made while the table was small joins the attempts to a sequential scan
// of every delivery (4 ms per batch at 10,000 rows in the webhooks bench); planned per run, it looks each one up.
const completeStatement = new Statement<{ id: string; failing_since: Date | null; enabled: boolean | null; user_id: string | null; url: string | null }>(
  sql`WITH c AS (
       SELECT * FROM unnest(${p('ids')}::uuid[], ${p('leases')}::uuid[], ${p('statuses')}::text[], ${p('responseStatuses')}::int[], ${p('errors')}::text[], ${p('durations')}::int[],
                            ${p('startedAt')}::timestamptz[], ${p('nextAttemptAt')}::timestamptz[], ${p('outcomes')}::text[], ${p('healthy')}::uuid[], ${p('failing')}::uuid[])
         AS c(id, lease, status, response_status, error, duration_ms, started_at, next_attempt_at, outcome, healthy_endpoint, failing_endpoint)
     ), u AS (
       UPDATE ${deliveries} d
          SET ${names(deliveries.status)} = c.status, ${names(deliveries.responseStatus)} = c.response_status, ${names(deliveries.error)} = c.error,
              ${names(deliveries.durationMs)} = c.duration_ms, ${names(deliveries.lastAttemptAt)} = c.started_at,
              ${names(deliveries.nextAttemptAt)} = COALESCE(c.next_attempt_at, ${d.nextAttemptAt}),
              ${names(deliveries.deliveredAt)} = CASE WHEN c.status = 'delivered' THEN clock_timestamp() ELSE ${d.deliveredAt} END,
              ${names(deliveries.lockedUntil)} = NULL, ${names(deliveries.lease)} = NULL
         FROM c
        WHERE ${d.id} = c.id AND ${d.lease} = c.lease
        RETURNING ${d.id} AS id, ${d.attempts} AS attempts, c.started_at, c.outcome, c.response_status, c.error, c.duration_ms, c.healthy_endpoint, c.failing_endpoint
     ), h AS (
       UPDATE ${endpoints} SET ${names(endpoints.failingSince)} = NULL
        WHERE ${endpoints.id} IN (SELECT healthy_endpoint FROM u WHERE healthy_endpoint IS NOT NULL) AND ${endpoints.failingSince} IS NOT NULL
     ), f AS (
       UPDATE ${endpoints} SET ${names(endpoints.failingSince)} = COALESCE(${endpoints.failingSince}, clock_timestamp())
        WHERE ${endpoints.id} IN (SELECT failing_endpoint FROM u WHERE failing_endpoint IS NOT NULL)
        RETURNING ${endpoints.id} AS id, ${endpoints.failingSince} AS failing_since, ${endpoints.enabled} AS enabled, ${endpoints.userId} AS user_id, ${endpoints.url} AS url
     ), logged AS (
       INSERT INTO ${attempts} (${names(attempts.deliveryId, attempts.attempt, attempts.startedAt, attempts.outcome, attempts.responseStatus, attempts.error, attempts.durationMs)})
       SELECT id, attempts, started_at, outcome, response_status, error, duration_ms FROM u WHERE outcome <> 'delivered'
     )
     SELECT u.id, f.failing_since, f.enabled, f.user_id, f.url FROM u LEFT JOIN f ON f.id = u.failing_endpoint`,
  undefined,
  { prepare: false },
);

/**
 * Finish attempts, each only while its lease is still held (a worker whose lease expired and was
 * reclaimed records nothing). One statement for any number of attempts: the outcome, the attempt
 * log (see attemptLog: an attempt that delivered is the delivery row itself) and the endpoints'
 * health (a success ends its endpoint's failure streak, a failure starts or continues it). An
 * endpoint that both succeeded and failed in one call counts as failing (one statement cannot
 * change a row twice). Returns, per completion, what it recorded.
 */
export async function completeAttempts(q: Queryable, cs: readonly Completion[]): Promise<Recorded[]> {
  const failing = new Set(cs.map((x) => x.failingEndpoint).filter(Boolean));
  const { rows } = await completeStatement.run(q, {
    ids: cs.map((x) => x.id),
    leases: cs.map((x) => x.lease),
    statuses: cs.map((x) => x.status),
    responseStatuses: cs.map((x) => x.responseStatus),
    errors: cs.map((x) => x.error?.slice(0, 500) ?? null),
    durations: cs.map((x) => x.durationMs),
    startedAt: cs.map((x) => x.startedAt),
    nextAttemptAt: cs.map((x) => x.nextAttemptAt),
    outcomes: cs.map((x) => x.outcome),
    healthy: cs.map((x) => (x.healthyEndpoint && !failing.has(x.healthyEndpoint) ? x.healthyEndpoint : null)),
    failing: cs.map((x) => x.failingEndpoint ?? null),
  });
  const byId = new Map(rows.map((r) => [r.id, r]));
  return cs.map((x) => {
    const r = byId.get(x.id);
    if (!r) return { recorded: false, failing: null };
    return { recorded: true, failing: r.failing_since ? { failingSince: r.failing_since, enabled: r.enabled!, userId: r.user_id!, url: r.url! } : null };
  });
}

/** completeAttempts, answering only whether each was recorded. */
export async function completeMany(q: Queryable, cs: readonly Completion[]): Promise<boolean[]> {
  return (await completeAttempts(q, cs)).map((r) => r.recorded);
}

const loggedFields = {
  attempt: attempts.attempt,
  startedAt: attempts.startedAt,
  outcome: attempts.outcome,
  responseStatus: attempts.responseStatus,
  error: attempts.error,
  durationMs: attempts.durationMs,
};
export type LoggedAttempt = RowOf<typeof loggedFields>;

/**
 * The attempt that delivered, as the delivery row (aliased `r`) holds it (see attemptLog): the
 * values of loggedFields, in their order, and when the row holds one.
 */
const deliveredAttempt = (r: typeof d | typeof was) => ({
  values: sql`${r.attempts}, ${r.lastAttemptAt}, 'delivered', ${r.responseStatus}, ${r.error}, COALESCE(${r.durationMs}, 0)`,
  held: sql`${r.status} = 'delivered' AND ${r.lastAttemptAt} IS NOT NULL`,
});

// the second branch lists the same columns in the same order (a UNION names them after the first)
const attemptLogStatement = statement(
  sql`SELECT ${selectList(loggedFields)} FROM ${attempts} WHERE ${attempts.deliveryId} = ${p('id')}
      UNION ALL
      SELECT ${deliveredAttempt(d).values}
        FROM ${deliveries} d WHERE ${d.id} = ${p('id')} AND ${deliveredAttempt(d).held}
         AND NOT EXISTS (SELECT 1 FROM ${attempts} WHERE ${attempts.deliveryId} = ${d.id} AND ${attempts.attempt} = ${d.attempts})
      ORDER BY ${sql.identifier('attempt')}`,
  loggedFields,
);

/**
 * Every recorded attempt of a delivery, oldest first. `webhook.attempts` holds the ones that did not
 * deliver; the one that delivered is the delivery row itself (its attempt count, last attempt time,
 * status and duration), so the usual delivery (delivered at its first attempt) writes no log row:
 * that insert and its foreign-key check were a third of a completion's cost. Rows written before
 * (or by an older replica during an upgrade) also log delivering attempts; each counts once.
 */
export async function attemptLog(q: Queryable, deliveryId: string): Promise<LoggedAttempt[]> {
  return (await attemptLogStatement.run(q, { id: deliveryId })).rows;
}

/** Disable an enabled endpoint; true when this call did it (so the owner is told once). */
export async function disableEndpoint(q: Queryable, endpointId: string, reason: string): Promise<{ userId: string; url: string } | null> {
  const [row] = await orm(q)
    .update(endpoints)
    .set({ enabled: false, disabledReason: reason, updatedAt: sql`clock_timestamp()` })
    .where(and(eq(endpoints.id, endpointId), eq(endpoints.enabled, true)))
    .returning({ userId: endpoints.userId, url: endpoints.url });
  return row ?? null;
}

const ownDelivery = (userId: string, endpointId: string, id: string) => and(eq(deliveries.id, id), eq(deliveries.endpointId, endpointId), eq(deliveries.userId, userId));

export async function getDelivery(q: Queryable, userId: string, endpointId: string, id: string): Promise<DeliveryRow> {
  const [row] = await orm(q).select().from(deliveries).where(ownDelivery(userId, endpointId, id));
  if (!row) throw new AppError('NOT_FOUND', 'no such delivery');
  return row;
}

export async function listDeliveries(q: Queryable, userId: string, endpointId: string, limit: number): Promise<DeliveryRow[]> {
  return orm(q)
    .select()
    .from(deliveries)
    .where(and(eq(deliveries.endpointId, endpointId), eq(deliveries.userId, userId)))
    .orderBy(desc(deliveries.createdAt), desc(deliveries.id))
    .limit(limit);
}

const requeueStatement = statement(
  sql`WITH claimed AS (
       UPDATE ${deliveries} d
          SET ${names(deliveries.status)} = 'pending', ${names(deliveries.manual)} = true, ${names(deliveries.maxAttempts)} = ${d.attempts} + 1, ${names(deliveries.error)} = NULL,
              ${names(deliveries.attempts)} = ${d.attempts} + 1, ${names(deliveries.lease)} = gen_random_uuid(),
              ${names(deliveries.lockedUntil)} = clock_timestamp() + ${p('leaseMs')} * interval '1 millisecond'
        WHERE ${d.id} = ${p('id')} AND ${d.endpointId} = ${p('endpointId')} AND ${d.userId} = ${p('userId')} AND (${d.lockedUntil} IS NULL OR ${d.lockedUntil} < clock_timestamp())
        RETURNING d.*
     ), archived AS (
       -- the attempt that delivered was the row itself (attemptLog): it goes to the log before the row is reused
       INSERT INTO ${attempts} (${names(attempts.deliveryId, attempts.attempt, attempts.startedAt, attempts.outcome, attempts.responseStatus, attempts.error, attempts.durationMs)})
       SELECT ${was.id}, ${deliveredAttempt(was).values}
         FROM claimed JOIN ${deliveries} was ON ${was.id} = claimed.id
        WHERE ${deliveredAttempt(was).held}
       ON CONFLICT DO NOTHING
     )
     ${claimReturning()}`,
  claimFields,
);

/**
 * Send a logged delivery once more, now: same body, same delivery id, one more attempt. Returns it
 * leased to the caller (so the background worker cannot take it first), or null when it is in flight.
 * A delivered one's attempt moves to the attempt log (every CTE reads the row as it was before the
 * statement).
 */
export async function requeue(q: Queryable, userId: string, endpointId: string, id: string, leaseMs: number): Promise<ClaimedDelivery | null> {
  const { rows } = await requeueStatement.run(q, { id, endpointId, userId, leaseMs });
  if (rows[0]) return rows[0];
  await getDelivery(q, userId, endpointId, id); // not found → 404; otherwise it is in flight already
  return null;
}

const testDeliveryStatement = statement(
  sql`WITH claimed AS (
       INSERT INTO ${deliveries} (${names(deliveries.id, deliveries.eventMsgId, deliveries.endpointId, deliveries.userId, deliveries.event, deliveries.manual, deliveries.maxAttempts, deliveries.attempts, deliveries.lease, deliveries.lockedUntil)})
       VALUES (${p('id')}, ${p('msgId')}, ${p('endpointId')}, ${p('userId')}, 'task.test', true, 1, 1, gen_random_uuid(), clock_timestamp() + ${p('leaseMs')} * interval '1 millisecond')
       RETURNING *)
     ${claimReturning()}`,
  claimFields,
);

/** A synthetic event and its single manual delivery to one endpoint, leased to the caller. */
export async function insertTestDelivery(client: PoolClient, userId: string, endpointId: string, body: string, leaseMs: number): Promise<ClaimedDelivery> {
  const msgId = `test:${randomUUID()}`;
  await orm(client).insert(events).values({ msgId, userId, event: 'task.test', body });
  const { rows } = await testDeliveryStatement.run(client, { id: randomUUID(), msgId, endpointId, userId, leaseMs });
  return rows[0]!;
}

/** Drop finished deliveries (and their events) older than the retention. */
export async function prune(q: Queryable, retentionDays: number): Promise<void> {
  const db = orm(q);
  const before = sql`clock_timestamp() - ${retentionDays} * interval '1 day'`;
  await db.delete(deliveries).where(and(ne(deliveries.status, 'pending'), lt(deliveries.createdAt, before)));
  await db.delete(events).where(and(lt(events.receivedAt, before), notExists(db.select({ one: sql`1` }).from(deliveries).where(eq(deliveries.eventMsgId, events.msgId)))));
}
