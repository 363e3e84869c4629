import { orm, type OutboxRowValues, type Queryable } from '@tasksvc/runtime';
import { and, asc, eq, inArray, lt, or, sql } from 'drizzle-orm';
import { energyCheckins, importChunks, imports, importSources, profiles, taskCompletions, tasks, topics, userAchievements, wishlistItems } from './schema.ts';

/** The SQL of imports: their rows and files, the source ids earlier imports brought, and the bulk writes of a confirm. */

export type ImportRow = typeof imports.$inferSelect;
type NewImport = typeof imports.$inferInsert;

/** Rows per insert statement (PostgreSQL takes at most 65,535 parameters; a task row has about 30). */
export const WRITE_BATCH = 500;

export async function storeChunk(q: Queryable, userId: string, importId: string, seq: number, data: Buffer): Promise<void> {
  await orm(q)
    .insert(importChunks)
    .values({ importId, userId, seq, data })
    .onConflictDoUpdate({ target: [importChunks.importId, importChunks.seq], set: { data }, setWhere: eq(importChunks.userId, userId) });
}

/** The user's upload, its pieces in order (empty when there is none). */
export async function readFile(q: Queryable, userId: string, importId: string): Promise<{ seq: number; data: Buffer }[]> {
  return orm(q)
    .select({ seq: importChunks.seq, data: importChunks.data })
    .from(importChunks)
    .where(and(eq(importChunks.importId, importId), eq(importChunks.userId, userId)))
    .orderBy(asc(importChunks.seq));
}

export async function dropFile(q: Queryable, importId: string): Promise<void> {
  await orm(q).delete(importChunks).where(eq(importChunks.importId, importId));
}

export async function insertImport(q: Queryable, row: NewImport): Promise<ImportRow> {
  const [r] = await orm(q).insert(imports).values(row).returning();
  return r!;
}

export async function getImport(q: Queryable, userId: string, id: string): Promise<ImportRow | null> {
  const [r] = await orm(q)
    .select()
    .from(imports)
    .where(and(eq(imports.id, id), eq(imports.userId, userId)));
  return r ?? null;
}

/** A running import whose runner has not been heard of for this long was interrupted (its transaction rolled back). */
export const STALE_SECONDS = 60;

/**
 * Start the confirmed import (one runner wins): from its preview, after a failure, or when its
 * runner went silent (a crash: its transaction was rolled back, so nothing of it was written).
 */
export async function claimImport(q: Queryable, userId: string, id: string, total: number): Promise<ImportRow | null> {
  const [r] = await orm(q)
    .update(imports)
    .set({ status: 'running', heartbeatAt: sql`now()`, updatedAt: sql`now()`, progressDone: 0, progressTotal: total, error: null })
    .where(
      and(
        eq(imports.id, id),
        eq(imports.userId, userId),
        sql`${imports.expiresAt} > now()`,
        or(inArray(imports.status, ['previewed', 'failed']), and(eq(imports.status, 'running'), lt(imports.heartbeatAt, sql`now() - make_interval(secs => ${STALE_SECONDS})`))),
      ),
    )
    .returning();
  return r ?? null;
}

/** Progress of a running import (on its own connection: the import's transaction is not visible until it commits). */
export async function reportProgress(q: Queryable, id: string, done: number): Promise<void> {
  await orm(q)
    .update(imports)
    .set({ progressDone: done, heartbeatAt: sql`now()` })
    .where(and(eq(imports.id, id), eq(imports.status, 'running')));
}

export async function finishImport(q: Queryable, id: string, result: unknown, done: number): Promise<void> {
  await orm(q)
    .update(imports)
    .set({ status: 'done', result, progressDone: done, heartbeatAt: null, updatedAt: sql`now()` })
    .where(eq(imports.id, id));
}

export async function failImport(q: Queryable, id: string, error: string): Promise<void> {
  await orm(q)
    .update(imports)
    .set({ status: 'failed', error, progressDone: 0, heartbeatAt: null, updatedAt: sql`now()` })
    .where(and(eq(imports.id, id), eq(imports.status, 'running')));
}

export async function cancelImport(q: Queryable, userId: string, id: string): Promise<ImportRow | null> {
  const [r] = await orm(q)
    .update(imports)
    .set({ status: 'cancelled', updatedAt: sql`now()` })
    .where(and(eq(imports.id, id), eq(imports.userId, userId), inArray(imports.status, ['previewed', 'failed'])))
    .returning();
  return r ?? null;
}

/**
 * Expired previews lose their file (and read as expired); pieces of uploads that never became a
 * preview (the gateway gave up half-way) go after an hour. Any replica may run it, at any upload.
 */
export async function sweepImports(q: Queryable): Promise<void> {
  await orm(q)
    .update(imports)
    .set({ status: 'expired', updatedAt: sql`now()` })
    .where(and(inArray(imports.status, ['previewed', 'failed']), lt(imports.expiresAt, sql`now()`)));
  await orm(q)
    .delete(importChunks)
    .where(
      or(
        sql`${importChunks.importId} IN (SELECT ${imports.id} FROM ${imports} WHERE ${imports.status} IN ('expired', 'cancelled', 'done'))`,
        and(lt(importChunks.createdAt, sql`now() - interval '1 hour'`), sql`NOT EXISTS (SELECT 1 FROM ${imports} WHERE ${imports.id} = ${importChunks.importId})`),
      ),
    );
}

// ─── what earlier imports brought ───────────────────────────────────────────────────────────────

/** Of `keys`, those an earlier import of this user brought, with the row each became. */
export async function knownSources(q: Queryable, userId: string, keys: string[]): Promise<Map<string, string | null>> {
  const out = new Map<string, string | null>();
  for (let i = 0; i < keys.length; i += 5000) {
    const rows = await orm(q)
      .select({ key: importSources.sourceKey, target: importSources.targetId })
      .from(importSources)
      .where(and(eq(importSources.userId, userId), inArray(importSources.sourceKey, keys.slice(i, i + 5000))));
    for (const r of rows) out.set(r.key, r.target);
  }
  return out;
}

/** Of `ids`, those that are this user's own tasks already (an own export imported back into its account). */
export async function ownTaskIds(q: Queryable, userId: string, ids: string[]): Promise<Set<string>> {
  const out = new Set<string>();
  for (let i = 0; i < ids.length; i += 5000) {
    const rows = await orm(q)
      .select({ id: tasks.id })
      .from(tasks)
      .where(and(eq(tasks.userId, userId), inArray(tasks.id, ids.slice(i, i + 5000))));
    for (const r of rows) out.add(r.id);
  }
  return out;
}

/**
 * Remember what this import brings. A key another transaction remembered meanwhile (the same file
 * confirmed twice at once) waits for it and is then left out: the caller writes only the returned keys.
 */
export async function claimSources(q: Queryable, userId: string, importId: string, entries: { key: string; kind: string; targetId: string | null }[]): Promise<Set<string>> {
  const claimed = new Set<string>();
  for (let i = 0; i < entries.length; i += WRITE_BATCH * 4) {
    const rows = await orm(q)
      .insert(importSources)
      .values(entries.slice(i, i + WRITE_BATCH * 4).map((e) => ({ userId, sourceKey: e.key, kind: e.kind, targetId: e.targetId, importId })))
      .onConflictDoNothing()
      .returning({ key: importSources.sourceKey });
    for (const r of rows) claimed.add(r.key);
  }
  return claimed;
}

/** Topics of the user by title (lower case), to add to an existing topic rather than make a second one. */
export async function topicsByTitle(q: Queryable, userId: string): Promise<Map<string, string>> {
  const rows = await orm(q).select({ id: topics.id, title: topics.title }).from(topics).where(eq(topics.userId, userId));
  return new Map(rows.map((r) => [r.title.toLowerCase(), r.id]));
}

export async function existingTopicIds(q: Queryable, userId: string, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await orm(q)
    .select({ id: topics.id })
    .from(topics)
    .where(and(eq(topics.userId, userId), inArray(topics.id, ids)));
  return new Set(rows.map((r) => r.id));
}

// ─── bulk writes of a confirm (inside its transaction) ──────────────────────────────────────────

async function inBatches<T>(rows: T[], write: (batch: T[]) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < rows.length; i += WRITE_BATCH) await write(rows.slice(i, i + WRITE_BATCH));
}

export const insertTopicRows = (q: Queryable, rows: (typeof topics.$inferInsert)[]) => inBatches(rows, (b) => orm(q).insert(topics).values(b));
export const insertTaskRows = (q: Queryable, rows: (typeof tasks.$inferInsert)[]) => inBatches(rows, (b) => orm(q).insert(tasks).values(b));
export const insertCompletionRows = (q: Queryable, rows: (typeof taskCompletions.$inferInsert)[]) => inBatches(rows, (b) => orm(q).insert(taskCompletions).values(b));
export const insertWishlistRows = (q: Queryable, rows: (typeof wishlistItems.$inferInsert)[]) => inBatches(rows, (b) => orm(q).insert(wishlistItems).values(b));
export const insertCheckinRows = (q: Queryable, rows: (typeof energyCheckins.$inferInsert)[]) =>
  inBatches(rows, (b) => orm(q).insert(energyCheckins).values(b).onConflictDoNothing());
export const insertAchievementRows = (q: Queryable, rows: (typeof userAchievements.$inferInsert)[]) =>
  inBatches(rows, (b) => orm(q).insert(userAchievements).values(b).onConflictDoNothing());

/** Outbox rows of the import's events, in one statement per batch. */
export async function insertOutboxRows(q: Queryable, schema: string, rows: OutboxRowValues[]): Promise<void> {
  await inBatches(rows, (b) =>
    q.query(`INSERT INTO "${schema}".outbox (id, subject, payload, traceparent) SELECT * FROM unnest($1::uuid[], $2::text[], $3::jsonb[], $4::text[])`, [
      b.map((r) => r.id),
      b.map((r) => r.subject),
      b.map((r) => r.payload),
      b.map((r) => r.traceparent),
    ]),
  );
}

/**
 * Take `count` list positions and count the tasks on the profile (as a create does), the next
 * position never below `atLeast` (tasks that keep their own order); returns the first position taken.
 */
export async function reserveTasks(q: Queryable, userId: string, count: number, atLeast = 0): Promise<number> {
  const [r] = await orm(q)
    .update(profiles)
    .set({ nextSortOrder: sql`GREATEST(${profiles.nextSortOrder}, ${atLeast}) + ${count}`, taskCount: sql`${profiles.taskCount} + ${count}`, updatedAt: sql`now()` })
    .where(eq(profiles.userId, userId))
    .returning({ next: profiles.nextSortOrder });
  return r!.next - count;
}

export async function hasAchievements(q: Queryable, userId: string): Promise<boolean> {
  const rows = await orm(q).select({ key: userAchievements.achievementKey }).from(userAchievements).where(eq(userAchievements.userId, userId)).limit(1);
  return rows.length > 0;
}
