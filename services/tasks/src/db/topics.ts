import { names, orm, type Queryable } from '@tasksvc/runtime';
import { and, asc, count, eq, getTableColumns, inArray, isNull, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import { tasks, topics, type PromotedFrom } from './schema.ts';

export type TopicRow = typeof topics.$inferSelect & { taskCount: number; openTaskCount: number };
/** What a create or an update may set. */
export type TopicColumns = Partial<Pick<typeof topics.$inferInsert, 'title' | 'description' | 'color' | 'icon' | 'priority' | 'archived' | 'sequential' | 'defaultEnergyLevel' | 'davName' | 'promotedFrom'>>;

const k = alias(tasks, 'k');
const tp = alias(topics, 'tp');
const ofTopic = and(eq(k.userId, topics.userId), eq(k.topicId, topics.id));
/** A topic with its task counts. */
const TOPIC = {
  ...getTableColumns(topics),
  taskCount: sql<number>`(SELECT count(*)::int FROM ${tasks} k WHERE ${ofTopic})`,
  openTaskCount: sql<number>`(SELECT count(*)::int FROM ${tasks} k WHERE ${ofTopic} AND ${isNull(k.completedAt)})`,
};
const own = (userId: string, id: string) => and(eq(topics.id, id), eq(topics.userId, userId));

export async function listTopics(q: Queryable, userId: string, archived: 'true' | 'false' | 'all'): Promise<TopicRow[]> {
  return orm(q)
    .select(TOPIC)
    .from(topics)
    .where(and(eq(topics.userId, userId), archived === 'all' ? undefined : eq(topics.archived, archived === 'true')))
    .orderBy(asc(topics.sortOrder), asc(topics.createdAt), asc(topics.id))
    .limit(1000);
}

export async function getTopic(q: Queryable, userId: string, id: string): Promise<TopicRow | null> {
  const [row] = await orm(q).select(TOPIC).from(topics).where(own(userId, id));
  return row ?? null;
}

export async function topicExists(q: Queryable, userId: string, id: string): Promise<boolean> {
  return (await orm(q).select({ id: topics.id }).from(topics).where(own(userId, id))).length > 0;
}

export async function insertTopic(q: Queryable, userId: string, cols: TopicColumns & { title: string }): Promise<TopicRow> {
  const last = sql`(SELECT COALESCE(MAX(${topics.sortOrder}), -1) + 1 FROM ${topics} WHERE ${topics.userId} = ${userId})`;
  const [row] = await orm(q)
    .insert(topics)
    .values({ ...cols, userId, sortOrder: last })
    .returning();
  return { ...row!, taskCount: 0, openTaskCount: 0 };
}

export async function updateTopic(q: Queryable, userId: string, id: string, cols: TopicColumns): Promise<TopicRow | null> {
  const [row] = await orm(q)
    .update(topics)
    .set({ ...cols, updatedAt: sql`now()` })
    .where(own(userId, id))
    .returning(TOPIC);
  return row ?? null;
}

export async function deleteTopic(q: Queryable, userId: string, id: string): Promise<boolean> {
  const r = await orm(q).delete(topics).where(own(userId, id));
  return (r.rowCount ?? 0) > 0;
}

/** How many of `ids` are this user's topics. */
export async function countOwnTopics(q: Queryable, userId: string, ids: string[]): Promise<number> {
  const [row] = await orm(q)
    .select({ n: count() })
    .from(topics)
    .where(and(eq(topics.userId, userId), inArray(topics.id, ids)));
  return row!.n;
}

export async function setTopicOrder(q: Queryable, userId: string, ids: string[]): Promise<void> {
  await orm(q).execute(
    sql`UPDATE ${topics} tp SET ${names(topics.sortOrder)} = o.ord - 1, ${names(topics.updatedAt)} = now() FROM unnest(${sql.param(ids)}::uuid[]) WITH ORDINALITY AS o(id, ord)
        WHERE ${tp.id} = o.id AND ${tp.userId} = ${userId}`,
  );
}

/**
 * The topic promote-to-topic made of the task `taskId` within the last `minutes`, locked for the
 * undo, with the ids of the tasks it holds now; null when there is none.
 */
export async function promotedTopicOf(q: Queryable, userId: string, taskId: string, minutes: number): Promise<{ topic: TopicRow; promotedFrom: PromotedFrom; taskIds: string[] } | null> {
  const [row] = await orm(q)
    .select({ id: topics.id })
    .from(topics)
    .where(and(eq(topics.userId, userId), sql`${topics.promotedFrom} -> 'task' ->> 'id' = ${taskId}`, sql`${topics.createdAt} > now() - make_interval(mins => ${minutes})`))
    .for('update');
  if (!row) return null;
  const topic = (await getTopic(q, userId, row.id))!;
  const held = await orm(q)
    .select({ id: tasks.id })
    .from(tasks)
    .where(and(eq(tasks.userId, userId), eq(tasks.topicId, row.id)));
  return { topic, promotedFrom: topic.promotedFrom!, taskIds: held.map((t) => t.id) };
}
