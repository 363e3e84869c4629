import { names, orm, statement, type Queryable } from '@tasksvc/runtime';
import { and, eq, isNull, lt, sql } from 'drizzle-orm';
import { idempotencyKeys as k } from './schema.ts';

const p = sql.placeholder;

/** How long an answer is kept for its key. */
export const IDEMPOTENCY_TTL_HOURS = 24;

/**
 * Claim a key for a request (one statement): a new key, or one whose answer is older than the
 * TTL, becomes this request's (status null while it runs). No row back: the key is live.
 */
const claimStatement = statement<{ claimed: boolean }>(
  sql`INSERT INTO ${k} (${names(k.userId, k.key, k.fingerprint)}) VALUES (${p('userId')}, ${p('key')}, ${p('fingerprint')})
      ON CONFLICT (${names(k.userId, k.key)}) DO UPDATE
        SET fingerprint = EXCLUDED.fingerprint, status = NULL, content_type = NULL, headers = NULL, body = NULL, created_at = now()
        WHERE ${k.createdAt} < now() - interval '${sql.raw(String(IDEMPOTENCY_TTL_HOURS))} hours'
      RETURNING true AS claimed`,
);

export interface StoredAnswer {
  fingerprint: string;
  status: number | null;
  contentType: string | null;
  headers: Record<string, string> | null;
  body: Buffer | null;
}

/** Claim the key, or read the live answer (or the running request) it already has. */
export async function claimKey(q: Queryable, userId: string, key: string, fingerprint: string): Promise<{ claimed: true } | { claimed: false; answer: StoredAnswer | null }> {
  if ((await claimStatement.run(q, { userId, key, fingerprint })).rows.length > 0) return { claimed: true };
  const [row] = await orm(q)
    .select({ fingerprint: k.fingerprint, status: k.status, contentType: k.contentType, headers: k.headers, body: k.body })
    .from(k)
    .where(and(eq(k.userId, userId), eq(k.key, key)));
  return { claimed: false, answer: row ?? null };
}

export async function storeAnswer(q: Queryable, userId: string, key: string, a: { status: number; contentType: string | null; headers: Record<string, string> | null; body: Buffer | null }): Promise<void> {
  await orm(q)
    .update(k)
    .set({ status: a.status, contentType: a.contentType, headers: a.headers, body: a.body })
    .where(and(eq(k.userId, userId), eq(k.key, key)));
}

/** Give a key back (its request failed in a way a retry may fix: 5xx, 429). */
export async function releaseKey(q: Queryable, userId: string, key: string): Promise<void> {
  await orm(q)
    .delete(k)
    .where(and(eq(k.userId, userId), eq(k.key, key), isNull(k.status)));
}

/** Answers past the TTL. */
export async function dropExpiredKeys(q: Queryable): Promise<void> {
  await orm(q)
    .delete(k)
    .where(lt(k.createdAt, sql`now() - interval '${sql.raw(String(IDEMPOTENCY_TTL_HOURS))} hours'`));
}
