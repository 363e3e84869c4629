import { createHash } from 'node:crypto';
import { AppError, type AnyRoute, type Identity } from '@tasksvc/proto';
import type { Logger, Pool } from '@tasksvc/runtime';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { claimKey, dropExpiredKeys, releaseKey, storeAnswer } from './db/idempotency.ts';

/**
 * `Idempotency-Key` on every POST, PUT, PATCH and DELETE of the API (docs/api.md): the first request
 * with a key runs and its answer is kept for 24 hours per user and key; a retry with the same key
 * gets that answer again (header `Idempotent-Replayed: true`) without running the write twice. The
 * same key with a different request (method, path or body) is refused with 422
 * IDEMPOTENCY_KEY_REUSED; while the first request still runs, a retry gets 409 CONFLICT with
 * Retry-After. Answers that a retry may change (5xx, 429) are not kept: the key is free again.
 * Kept in PostgreSQL, so every gateway replica answers alike.
 */

export const IDEMPOTENCY_HEADER = 'idempotency-key';
const KEY_RE = /^[\x21-\x7e]{1,255}$/;

/** What a request answered, as the client got it. */
export interface Answer {
  status: number;
  contentType: string | null;
  headers: Record<string, string> | null;
  body: string | Uint8Array | null;
}

interface Deps {
  pool: Pool;
  log: Logger;
}

/** The request's key, or undefined without one; a malformed key is a 400 naming the header. */
export function idempotencyKeyOf(req: FastifyRequest, route: AnyRoute, user: Identity | null): string | undefined {
  const raw = req.headers[IDEMPOTENCY_HEADER];
  if (raw === undefined || route.method === 'GET' || !user) return undefined;
  const key = Array.isArray(raw) ? raw[0]! : raw;
  if (!KEY_RE.test(key)) throw new AppError('VALIDATION_FAILED', 'invalid Idempotency-Key', [{ path: 'headers.idempotency-key', message: 'must be 1 to 255 visible ASCII characters (a UUID is a good key)' }]);
  return key;
}

function fingerprint(req: FastifyRequest): string {
  const h = createHash('sha256').update(`${req.method} ${req.url}\n`);
  // an upload's body is its bytes; any other body its parsed JSON
  return h.update(Buffer.isBuffer(req.body) ? req.body : JSON.stringify(req.body ?? null)).digest('hex');
}

function send(reply: FastifyReply, a: Answer, replayed: boolean): FastifyReply {
  if (replayed) void reply.header('idempotent-replayed', 'true');
  void reply.code(a.status);
  if (a.headers) void reply.headers(a.headers);
  if (a.contentType) void reply.type(a.contentType);
  return a.body === null ? reply.send() : reply.send(a.body);
}

/**
 * Run `run` once per (user, key): a stored answer is replayed, a new key claimed, run and its answer
 * kept. `run` answers or throws as the route does; an AppError below 500 (but 429) is kept as the answer.
 */
export async function withIdempotency(deps: Deps, req: FastifyRequest, reply: FastifyReply, userId: string, key: string, run: () => Promise<Answer>): Promise<FastifyReply> {
  const print = fingerprint(req);
  let claim: Awaited<ReturnType<typeof claimKey>>;
  try {
    claim = await claimKey(deps.pool, userId, key, print);
  } catch (err) {
    deps.log.warn({ err }, 'idempotency key not checked: database unavailable');
    throw new AppError('SERVICE_UNAVAILABLE', 'the request could not be checked against its Idempotency-Key; try again shortly');
  }
  if (!claim.claimed) {
    const a = claim.answer;
    if (a && a.fingerprint !== print) throw new AppError('IDEMPOTENCY_KEY_REUSED', 'this Idempotency-Key was used for a different request (method, path or body) in the last 24 hours; use a new key for a new request');
    if (!a || a.status === null) {
      void reply.header('retry-after', '1');
      throw new AppError('CONFLICT', 'a request with this Idempotency-Key is still being processed; retry in a moment for its answer');
    }
    return send(reply, { status: a.status, contentType: a.contentType, headers: a.headers, body: a.body }, true);
  }
  if (Math.random() < 0.01) void dropExpiredKeys(deps.pool).catch((err: unknown) => deps.log.warn({ err }, 'expired idempotency keys not dropped'));
  let answer: Answer;
  try {
    answer = await run();
  } catch (err) {
    const kept = err instanceof AppError && err.status < 500 && err.status !== 429;
    await (kept
      ? storeAnswer(deps.pool, userId, key, { status: err.status, contentType: 'application/json; charset=utf-8', headers: null, body: Buffer.from(JSON.stringify(err.toBody())) })
      : releaseKey(deps.pool, userId, key)
    ).catch((e: unknown) => deps.log.warn({ err: e }, 'idempotency answer not recorded'));
    throw err;
  }
  const body = answer.body === null ? null : typeof answer.body === 'string' ? Buffer.from(answer.body) : Buffer.from(answer.body.buffer, answer.body.byteOffset, answer.body.byteLength);
  await storeAnswer(deps.pool, userId, key, { status: answer.status, contentType: answer.contentType, headers: answer.headers, body }).catch((err: unknown) => deps.log.warn({ err }, 'idempotency answer not recorded'));
  return send(reply, answer, false);
}
