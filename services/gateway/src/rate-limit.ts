import { AppError, DELETIONS_PER_HOUR, type AnyRoute, type Identity } from '@tasksvc/proto';
import type { Config, Logger, Pool } from '@tasksvc/runtime';
import type { FastifyReply } from 'fastify';
import { countCall, dropOldWindows, HOURLY } from './db/rate-limits.ts';

/** Writes per user and minute, by route subject (the reference's limits). */
export const WRITE_LIMITS_PER_MINUTE: Readonly<Record<string, number>> = {
  'tasks.http.create': 60,
  'tasks.http.complete': 30,
  'tasks.http.snooze': 30,
  'tasks.http.postpone': 10,
  'tasks.http.quest.postpone': 10,
  'tasks.http.topics.create': 30,
  // each upload is parsed whole and kept until confirmed or expired
  'tasks.http.import.upload': 10,
};

export interface HourlyLimit {
  /** shared by every route that counts against it (both exports count as one) */
  bucket: string;
  limit: number;
  /** the refusal's wording */
  what: string;
}

/** Routes limited per hour rather than per minute (the reference's limit on account deletion; the exports' is in user-export.ts). */
export const HOURLY_LIMITS: Readonly<Record<string, HourlyLimit>> = {
  'auth.http.user.delete': { bucket: 'user.delete', limit: DELETIONS_PER_HOUR, what: `at most ${DELETIONS_PER_HOUR} account deletions per hour` },
};

/**
 * Count one call of a rate-limited route for its user in PostgreSQL (so every replica shares the
 * count): a fixed window (a minute, or an hour for HOURLY_LIMITS) per user and route, one upsert per
 * call. Over the limit → 429 RATE_LIMITED with Retry-After (seconds to the window's end). Other routes
 * pass untouched. If the database cannot be asked, the call passes (and is logged): the write behind
 * it needs the database anyway. RATE_LIMIT_WRITES=false turns the limits off (load tests, benchmarks).
 */
export async function enforceRateLimit(route: AnyRoute, user: Identity | null, deps: { pool: Pool; log: Logger; config: Config }, reply: FastifyReply): Promise<void> {
  const hourly = HOURLY_LIMITS[route.rpc.subject];
  if (hourly) return enforceHourlyLimit(hourly, user, deps, reply);
  const limit = WRITE_LIMITS_PER_MINUTE[route.rpc.subject];
  if (limit) await enforceLimit(route.rpc.subject, limit, `${route.method} ${route.path}`, user, deps, reply);
}

/** Count one call against `limit` per user and minute under `subject` (a route's, or an area's such as CalDAV writes). */
export async function enforceLimit(subject: string, limit: number, what: string, user: Identity | null, deps: { pool: Pool; log: Logger; config: Config }, reply: FastifyReply): Promise<void> {
  await count(subject, limit, `at most ${limit} calls per minute to ${what}`, user, deps, reply);
}

/** Count one call against an hourly limit. */
export async function enforceHourlyLimit(l: HourlyLimit, user: Identity | null, deps: { pool: Pool; log: Logger; config: Config }, reply: FastifyReply): Promise<void> {
  await count(`${HOURLY}${l.bucket}`, l.limit, l.what, user, deps, reply);
}

async function count(subject: string, limit: number, what: string, user: Identity | null, deps: { pool: Pool; log: Logger; config: Config }, reply: FastifyReply): Promise<void> {
  if (!user || !deps.config.RATE_LIMIT_WRITES) return;
  let row: { hits: number; resetIn: number } | undefined;
  try {
    row = await countCall(deps.pool, user.id, subject);
    // old windows go away now and then (any replica may do it)
    if (row?.hits === 1 && Math.random() < 0.05) await dropOldWindows(deps.pool);
  } catch (err) {
    deps.log.warn({ err, subject }, 'rate limit not checked: database unavailable');
    return;
  }
  if (row && row.hits > limit) {
    void reply.header('retry-after', String(Math.max(1, row.resetIn)));
    throw new AppError('RATE_LIMITED', `${what}; try again in ${Math.max(1, row.resetIn)} s`);
  }
}
