import { AppError, cronRunRpc } from '@tasksvc/proto';
import { safeEqual } from '@tasksvc/runtime';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { GatewayDeps } from './deps.ts';

/** A dispatch may page through many users; the scheduler answers when every job is done. */
const CRON_TIMEOUT_MS = 120_000;

/** True when the request carries `Authorization: Bearer <secret>` (compared in constant time). */
export function cronAuthorized(secret: string | undefined, header: string | undefined): boolean {
  if (!secret) return true;
  const m = /^Bearer (.+)$/i.exec(header ?? '');
  return m !== null && safeEqual(m[1]!.trim(), secret);
}

/**
 * POST /api/cron: the external scheduler's trigger (the operator's CronJob calls it every 5 minutes).
 * A wrong or missing bearer is 401 CRON_UNAUTHORIZED before anything runs; with CRON_SECRET unset
 * the route is open, as the spec says, and a warning at start makes that visible.
 */
export function registerCron(app: FastifyInstance, deps: GatewayDeps): void {
  const secret = deps.config.CRON_SECRET;
  if (!secret) deps.log.warn('CRON_SECRET is unset: POST /api/cron accepts unauthenticated calls');
  // Checked in onRequest, before the body is read, so an unauthorised call costs nothing.
  const guard = async (req: FastifyRequest) => {
    if (!cronAuthorized(secret, req.headers.authorization)) throw new AppError('CRON_UNAUTHORIZED', 'missing or wrong cron bearer token');
    // The route takes no payload: a scheduler sending `Content-Type: application/json` with an empty
    // body must not fail on body parsing.
    if (!req.headers['content-length'] || req.headers['content-length'] === '0') delete req.headers['content-type'];
  };
  app.post('/api/cron', { onRequest: guard }, async (req, reply) => {
    const summary = await deps.bus.request(cronRunRpc, {}, { requestId: String(req.id), timeoutMs: CRON_TIMEOUT_MS });
    return reply.code(200).header('cache-control', 'no-store').send(summary);
  });
}
