import { AppError, CHANNEL_SAVES_PER_HOUR, CHANNEL_TESTS_PER_HOUR, DELETIONS_PER_HOUR, type AnyRoute, type BulkBody, type Identity } from '@tasksvc/proto';
import type { Config, Logger, Pool } from '@tasksvc/runtime';
import type { FastifyReply } from 'fastify';
import { countCall, dropOldWindows, HOURLY, type Counted } from './db/rate-limits.ts';
import { granted, leaseSize, RateBudget } from './rate-budget.ts';

/** The bucket of the bulk actions that have no single-task limit of their own (delete, changeTopic, setPriority). */
export const BULK_BUCKET = 'tasks.bulk';

/** Writes per user and minute, by bucket: a route's subject (the reference's limits), or BULK_BUCKET. */
export const WRITE_LIMITS_PER_MINUTE: Readonly<Record<string, number>> = {
  'tasks.http.create': 60,
  'tasks.http.complete': 30,
  'tasks.http.snooze': 30,
  'tasks.http.postpone': 10,
  'tasks.http.quest.postpone': 10,
  'tasks.http.promote': 10,
  'tasks.http.topics.create': 30,
  // each upload is parsed whole and kept until confirmed or expired
  'tasks.http.import.upload': 10,
  // one bulk call's worth (its most) a minute: a user's bulk changes fan out to at most 200 tasks'
  // events (to 10 endpoints each) a minute
  [BULK_BUCKET]: 200,
};

const BULK_SUBJECTS = new Set(['tasks.http.bulk', 'tasks.http.bulk.post']);
/** The bucket each bulk action counts its tasks against: a single task's limit where the action has one. */
const BULK_ACTION_BUCKET: Readonly<Record<BulkBody['action'], string>> = {
  complete: 'tasks.http.complete',
  snooze: 'tasks.http.snooze',
  delete: BULK_BUCKET,
  changeTopic: BULK_BUCKET,
  setPriority: BULK_BUCKET,
};

export interface HourlyLimit {
  /** shared by every route that counts against it (both exports count as one) */
  bucket: string;
  limit: number;
  /** the refusal's wording */
  what: string;
  /** a route parameter counted apart (the channel type: each channel its own budget); `what` names its value at `{}` */
  per?: string;
}

/** Routes limited per hour rather than per minute (the reference's limit on account deletion; the exports' is in user-export.ts). */
export const HOURLY_LIMITS: Readonly<Record<string, HourlyLimit>> = {
  'auth.http.user.delete': { bucket: 'user.delete', limit: DELETIONS_PER_HOUR, what: `at most ${DELETIONS_PER_HOUR} account deletions per hour` },
  // a test mails or calls out at once, and saving a new e-mail address mails it a confirmation link (issue 56 #2)
  'notifier.http.channel.test': { bucket: 'channel.test', per: 'type', limit: CHANNEL_TESTS_PER_HOUR, what: `at most ${CHANNEL_TESTS_PER_HOUR} tests of the {} channel per hour` },
  'notifier.http.channel.save': { bucket: 'channel.save', per: 'type', limit: CHANNEL_SAVES_PER_HOUR, what: `at most ${CHANNEL_SAVES_PER_HOUR} saves of the {} channel per hour` },
};

/**
 * Count a call of a rate-limited route for its user in PostgreSQL (so every replica shares the
 * count): a fixed window (a minute, or an hour for HOURLY_LIMITS) per user and route. A replica
 * leases a few calls of a user's budget at once and spends them in memory (rate-budget.ts); the
 * leases asked for together share one upsert (db/rate-limits.ts). A bulk action counts each of its
 * tasks: bulk complete and snooze against the single action's limit, the others together against
 * BULK_BUCKET; one with more tasks than a whole minute allows is 422 LIMIT_EXCEEDED and counts
 * nothing (it could never pass). Over the limit → 429 RATE_LIMITED with Retry-After (seconds to the
 * window's end). Other
 * routes pass untouched. If the database cannot be asked, the call passes (and is logged): the write
 * behind it needs the database anyway. RATE_LIMIT_WRITES=false turns the limits off (load tests,
 * benchmarks). `body` and `params` are the route's validated ones.
 */
export async function enforceRateLimit(route: AnyRoute, user: Identity | null, body: unknown, deps: { pool: Pool; log: Logger; config: Config }, reply: FastifyReply, params: Record<string, unknown> = {}): Promise<void> {
  const subject = route.rpc.subject;
  const hourly = HOURLY_LIMITS[subject];
  if (hourly?.per) {
    const value = String(params[hourly.per]);
    return enforceHourlyLimit({ bucket: `${hourly.bucket}:${value}`, limit: hourly.limit, what: hourly.what.replace('{}', value) }, user, deps, reply);
  }
  if (hourly) return enforceHourlyLimit(hourly, user, deps, reply);
  if (BULK_SUBJECTS.has(subject)) {
    const { action, taskIds } = body as BulkBody;
    const bucket = BULK_ACTION_BUCKET[action];
    const limit = WRITE_LIMITS_PER_MINUTE[bucket]!;
    const what = `at most ${limit} tasks per minute in ${bucket === BULK_BUCKET ? 'bulk delete, changeTopic and setPriority actions' : `bulk ${action} actions and single ${action}s together`}`;
    if (user && deps.config.RATE_LIMIT_WRITES && taskIds.length > limit) {
      throw new AppError('LIMIT_EXCEEDED', `${what}; this one has ${taskIds.length}: send them in parts`, [{ path: 'body.taskIds', message: `at most ${limit} a minute` }]);
    }
    return count(bucket, limit, what, user, deps, reply, taskIds.length);
  }
  const limit = WRITE_LIMITS_PER_MINUTE[subject];
  if (limit) await enforceLimit(subject, limit, `${route.method} ${route.path}`, user, deps, reply);
}

/** Count one call against `limit` per user and minute under `subject` (a route's, or an area's such as CalDAV writes). */
export async function enforceLimit(subject: string, limit: number, what: string, user: Identity | null, deps: { pool: Pool; log: Logger; config: Config }, reply: FastifyReply): Promise<void> {
  await count(subject, limit, `at most ${limit} calls per minute to ${what}`, user, deps, reply);
}

/** Count one call against an hourly limit. */
export async function enforceHourlyLimit(l: HourlyLimit, user: Identity | null, deps: { pool: Pool; log: Logger; config: Config }, reply: FastifyReply): Promise<void> {
  await count(`${HOURLY}${l.bucket}`, l.limit, l.what, user, deps, reply);
}

const budgets = new WeakMap<Pool, RateBudget>();

/**
 * Count `n` (a call: 1; a bulk action: its tasks) against `limit` under `subject`: from this replica's
 * lease of the user's budget when it has room (no statement), else by leasing more (rate-budget.ts).
 */
async function count(subject: string, limit: number, what: string, user: Identity | null, deps: { pool: Pool; log: Logger; config: Config }, reply: FastifyReply, n = 1): Promise<void> {
  if (!user || !deps.config.RATE_LIMIT_WRITES) return;
  let budget = budgets.get(deps.pool);
  if (!budget) budgets.set(deps.pool, (budget = new RateBudget()));
  const key = `${user.id} ${subject}`;
  if (budget.spend(key, n, Date.now())) return;
  const asked = leaseSize(limit, n, budget.knownHits(key, Date.now()));
  let row: Counted;
  try {
    row = await countCall(deps.pool, user.id, subject, asked);
    // old windows go away now and then (any replica may do it)
    if (row.hits === asked && Math.random() < 0.05) await dropOldWindows(deps.pool);
  } catch (err) {
    deps.log.warn({ err, subject }, 'rate limit not checked: database unavailable');
    return;
  }
  if (!budget.add(key, granted(limit, asked, row.hits), row.hits, row.windowEnd, n, Date.now())) {
    void reply.header('retry-after', String(Math.max(1, row.resetIn)));
    throw new AppError('RATE_LIMITED', `${what}; try again in ${Math.max(1, row.resetIn)} s`);
  }
}
