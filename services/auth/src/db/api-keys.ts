import { orm, type Queryable } from '@tasksvc/runtime';
import { and, desc, eq, gt, isNull, lt, or, sql } from 'drizzle-orm';
import { apiKeys, users } from './schema.ts';

/** A key as its owner sees it: never the hash. */
const keyColumns = {
  id: apiKeys.id,
  userId: apiKeys.userId,
  name: apiKeys.name,
  displayPrefix: apiKeys.displayPrefix,
  readOnly: apiKeys.readOnly,
  expiresAt: apiKeys.expiresAt,
  createdAt: apiKeys.createdAt,
  lastUsedAt: apiKeys.lastUsedAt,
};
export type ApiKeyRow = Omit<typeof apiKeys.$inferSelect, 'keyHash'>;

export async function insertApiKey(q: Queryable, k: { userId: string; name: string; displayPrefix: string; hash: string; readOnly: boolean; expiresAt: Date | null }): Promise<ApiKeyRow> {
  const [row] = await orm(q)
    .insert(apiKeys)
    .values({ userId: k.userId, name: k.name, displayPrefix: k.displayPrefix, keyHash: k.hash, readOnly: k.readOnly, expiresAt: k.expiresAt })
    .returning(keyColumns);
  return row!;
}

export async function listApiKeys(q: Queryable, userId: string): Promise<ApiKeyRow[]> {
  return orm(q).select(keyColumns).from(apiKeys).where(eq(apiKeys.userId, userId)).orderBy(desc(apiKeys.createdAt));
}

export async function deleteApiKey(q: Queryable, id: string, userId: string): Promise<boolean> {
  const r = await orm(q)
    .delete(apiKeys)
    .where(and(eq(apiKeys.id, id), eq(apiKeys.userId, userId)));
  return (r.rowCount ?? 0) > 0;
}

/** A live (unexpired) key by its hash, with its owner's email. The hash is the unique key: equality in SQL leaks nothing useful. */
export async function apiKeyByHash(q: Queryable, hash: string): Promise<(ApiKeyRow & { email: string | null; userLastActiveAt: Date | null }) | null> {
  const [row] = await orm(q)
    .select({ ...keyColumns, email: users.email, userLastActiveAt: users.lastActiveAt })
    .from(apiKeys)
    .innerJoin(users, eq(users.id, apiKeys.userId))
    .where(and(eq(apiKeys.keyHash, hash), or(isNull(apiKeys.expiresAt), gt(apiKeys.expiresAt, sql`now()`))));
  return row ?? null;
}

export async function touchApiKey(q: Queryable, id: string): Promise<void> {
  await orm(q)
    .update(apiKeys)
    .set({ lastUsedAt: sql`now()` })
    .where(and(eq(apiKeys.id, id), or(isNull(apiKeys.lastUsedAt), lt(apiKeys.lastUsedAt, sql`now() - interval '1 minute'`))));
}
