import { AppError } from '@tasksvc/proto';
import { jsonView, orm, type JsonView, type Queryable } from '@tasksvc/runtime';
import { and, asc, eq, getTableColumns, inArray, sql } from 'drizzle-orm';
import { caldavObjects, dailyQuests, energyCheckins, questPostponements, taskCompletions, tasks, topics, userAchievements, wishlistItems } from './schema.ts';

/**
 * Reads for the user's export (GET /api/user/export): everything of one user, the tasks and their
 * completions in pages. A page continues after a cursor in the order of an index that leads with
 * user_id, so each page is an index range (no OFFSET that rereads what came before: 100,000 tasks
 * are 200 pages, each as cheap as the first).
 */

const taskColumns = getTableColumns(tasks);
const completionColumns = getTableColumns(taskCompletions);

/**
 * A cursor is the last row's sort key as PostgreSQL prints it (`created_at::text` keeps the
 * microseconds a JavaScript Date would drop, so no row is skipped or repeated).
 */
type Cursor = string[];
const encode = (c: Cursor) => Buffer.from(JSON.stringify(c)).toString('base64url');
function decode(after: string | null, width: number): Cursor | null {
  if (after === null) return null;
  try {
    const c = JSON.parse(Buffer.from(after, 'base64url').toString()) as unknown;
    if (Array.isArray(c) && c.length === width && c.every((v) => typeof v === 'string')) return c;
  } catch {
    // fall through
  }
  throw new AppError('BAD_REQUEST', 'malformed export cursor');
}

export type ExportTaskRow = JsonView<typeof tasks.$inferSelect>;

/** Tasks in (sort_order, created_at, id) order (the tasks_user_order index), `limit` after the cursor. */
export async function taskPage(q: Queryable, userId: string, after: string | null, limit: number): Promise<{ rows: ExportTaskRow[]; cursors: string[] }> {
  const c = decode(after, 3);
  const rows = await orm(q)
    .select({ ...taskColumns, cursorCreatedAt: sql<string>`${tasks.createdAt}::text` })
    .from(tasks)
    .where(c ? sql`${tasks.userId} = ${userId} AND (${tasks.sortOrder}, ${tasks.createdAt}, ${tasks.id}) > (${Number(c[0])}, ${c[1]}::timestamptz, ${c[2]}::uuid)` : eq(tasks.userId, userId))
    .orderBy(asc(tasks.sortOrder), asc(tasks.createdAt), asc(tasks.id))
    .limit(limit);
  return {
    rows: rows.map(({ cursorCreatedAt: _, ...r }) => jsonView(r)),
    cursors: rows.map((r) => encode([String(r.sortOrder), r.cursorCreatedAt, r.id])),
  };
}

export type ExportCompletionRow = JsonView<typeof taskCompletions.$inferSelect>;

/** Completions in (local_date, id) order (the task_completions_user_date index leads with user_id, local_date). */
export async function completionPage(q: Queryable, userId: string, after: string | null, limit: number): Promise<{ rows: ExportCompletionRow[]; cursors: string[] }> {
  const c = decode(after, 2);
  const t = taskCompletions;
  const rows = await orm(q)
    .select(completionColumns)
    .from(t)
    .where(c ? sql`${t.userId} = ${userId} AND (${t.localDate}, ${t.id}) > (${c[0]}::date, ${c[1]}::uuid)` : eq(t.userId, userId))
    .orderBy(asc(t.localDate), asc(t.id))
    .limit(limit);
  return { rows: rows.map((r) => jsonView(r)), cursors: rows.map((r) => encode([r.localDate, r.id])) };
}

/** How many tasks and completions the user has (for the export's progress). */
export async function exportCounts(q: Queryable, userId: string): Promise<{ tasks: number; completions: number }> {
  const [row] = await orm(q)
    .select({
      tasks: sql<number>`(SELECT count(*)::int FROM ${tasks} WHERE ${tasks.userId} = ${userId})`,
      completions: sql<number>`(SELECT count(*)::int FROM ${taskCompletions} WHERE ${taskCompletions.userId} = ${userId})`,
    })
    .from(sql`(SELECT 1) one`);
  return row ?? { tasks: 0, completions: 0 };
}

/** What CalDAV clients gave these tasks (their UID and properties), by task id: the .ics export writes them back. */
export async function caldavObjectsOf(q: Queryable, userId: string, taskIds: string[]): Promise<Map<string, { uid: string; kept: (typeof caldavObjects.$inferSelect)['kept'] }>> {
  if (taskIds.length === 0) return new Map();
  const rows = await orm(q)
    .select({ taskId: caldavObjects.taskId, uid: caldavObjects.uid, kept: caldavObjects.kept })
    .from(caldavObjects)
    .where(and(eq(caldavObjects.userId, userId), inArray(caldavObjects.taskId, taskIds)));
  return new Map(rows.map((r) => [r.taskId, { uid: r.uid, kept: r.kept }]));
}

/** Topic titles by id (a VTODO's CATEGORIES). */
export async function topicTitles(q: Queryable, userId: string): Promise<Map<string, string>> {
  const rows = await orm(q).select({ id: topics.id, title: topics.title }).from(topics).where(eq(topics.userId, userId));
  return new Map(rows.map((r) => [r.id, r.title]));
}

/** The user's topics, quest history, postponements, achievements, energy check-ins and wishlist: each a few hundred rows at most a year. */
export async function userRecords(q: Queryable, userId: string) {
  const db = orm(q);
  const [topicRows, quests, postponements, achievements, checkins, wishlist] = await Promise.all([
    db.select().from(topics).where(eq(topics.userId, userId)).orderBy(asc(topics.sortOrder), asc(topics.createdAt), asc(topics.id)),
    db.select().from(dailyQuests).where(eq(dailyQuests.userId, userId)).orderBy(asc(dailyQuests.localDate)),
    db.select().from(questPostponements).where(eq(questPostponements.userId, userId)).orderBy(asc(questPostponements.createdAt), asc(questPostponements.id)),
    db.select().from(userAchievements).where(eq(userAchievements.userId, userId)).orderBy(asc(userAchievements.unlockedAt), asc(userAchievements.achievementKey)),
    db.select().from(energyCheckins).where(eq(energyCheckins.userId, userId)).orderBy(asc(energyCheckins.localDate)),
    db.select().from(wishlistItems).where(eq(wishlistItems.userId, userId)).orderBy(asc(wishlistItems.createdAt), asc(wishlistItems.id)),
  ]);
  return { topicRows, quests, postponements, achievements, checkins, wishlist };
}
