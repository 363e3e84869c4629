import { randomUUID } from 'node:crypto';
import { AppError, MAX_WEBHOOK_ENDPOINTS, type WebhookEndpoint } from '@tasksvc/proto';
import { orm, type PoolClient, type Queryable } from '@tasksvc/runtime';
import { and, asc, count, eq, sql } from 'drizzle-orm';
import { endpoints } from './schema.ts';

export type EndpointRow = typeof endpoints.$inferSelect;

export function endpointView(r: EndpointRow): WebhookEndpoint {
  return {
    id: r.id,
    url: r.url,
    events: r.events as WebhookEndpoint['events'],
    hasSecret: r.secretEnc !== null,
    enabled: r.enabled,
    disabledReason: r.disabledReason,
    failingSince: r.failingSince?.toISOString() ?? null,
    createdAt: r.createdAt.toISOString(),
    updatedAt: r.updatedAt.toISOString(),
  };
}

const notFound = () => new AppError('WEBHOOK_NOT_FOUND', 'no such webhook endpoint');
const own = (userId: string, id: string) => and(eq(endpoints.id, id), eq(endpoints.userId, userId));

export async function listEndpoints(q: Queryable, userId: string): Promise<EndpointRow[]> {
  return orm(q).select().from(endpoints).where(eq(endpoints.userId, userId)).orderBy(asc(endpoints.createdAt), asc(endpoints.id));
}

/** Scoped to the owner: another user's id is simply not found. */
export async function getEndpoint(q: Queryable, userId: string, id: string): Promise<EndpointRow> {
  const [row] = await orm(q).select().from(endpoints).where(own(userId, id));
  if (!row) throw notFound();
  return row;
}

/** Insert under a per-user advisory lock so concurrent creates cannot pass the limit together. */
export async function insertEndpoint(client: PoolClient, userId: string, v: { url: string; secretEnc: string | null; events: string[]; enabled: boolean }): Promise<EndpointRow> {
  const db = orm(client);
  await db.execute(sql`SELECT pg_advisory_xact_lock(hashtext('webhook.endpoints'), hashtext(${userId}))`);
  const [have] = await db.select({ n: count() }).from(endpoints).where(eq(endpoints.userId, userId));
  if (have!.n >= MAX_WEBHOOK_ENDPOINTS) {
    throw new AppError('LIMIT_EXCEEDED', `at most ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints per user; delete one first`);
  }
  const [row] = await db
    .insert(endpoints)
    .values({ id: randomUUID(), userId, ...v })
    .returning();
  return row!;
}

export async function updateEndpoint(
  q: Queryable,
  userId: string,
  id: string,
  v: { url?: string | undefined; secretEnc?: string | null | undefined; events?: string[] | undefined; enabled?: boolean | undefined },
): Promise<EndpointRow> {
  // re-enabling (or disabling by hand) clears the service's reason and the failure streak
  const health = v.enabled === undefined ? {} : { disabledReason: null, failingSince: null };
  const [row] = await orm(q)
    .update(endpoints)
    .set({ url: v.url, secretEnc: v.secretEnc, events: v.events, enabled: v.enabled, ...health, updatedAt: sql`clock_timestamp()` })
    .where(own(userId, id))
    .returning();
  if (!row) throw notFound();
  return row;
}

export async function deleteEndpoint(q: Queryable, userId: string, id: string): Promise<void> {
  const r = await orm(q).delete(endpoints).where(own(userId, id));
  if (r.rowCount === 0) throw notFound();
}
