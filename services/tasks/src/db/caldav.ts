import { orm, type Queryable } from '@tasksvc/runtime';
import { and, asc, eq, getTableColumns, gt, isNull, lt, or, sql, type SQL } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import { caldavObjects, caldavTombstones, tasks, topics } from './schema.ts';

/** Tombstones are kept this long; a sync token older than this (less a day's margin) has expired. */
export const CALDAV_TOMBSTONE_DAYS = 30;

/**
 * SQL of the CalDAV server (handlers/caldav.ts): collections (the user's topics, and `tasks` for the
 * tasks without one), their members with what a client gave them (caldav_objects), what changed or
 * left since a sync token, and the token itself. Every statement is scoped by user_id.
 */

export type TaskFields = typeof tasks.$inferSelect;
export type KeptJson = typeof caldavObjects.$inferSelect.kept;

/** The collection of the tasks without a topic. */
export const INBOX = 'tasks';

export interface Collection {
  /** null: the tasks without a topic */
  topicId: string | null;
  /** the path segment: `tasks`, the client's MKCALENDAR name, or the topic's id */
  segment: string;
  title: string;
  description: string | null;
  color: string | null;
  sortOrder: number;
}

const topicCollection = {
  topicId: topics.id,
  segment: sql<string>`COALESCE(${topics.davName}, ${topics.id}::text)`,
  title: topics.title,
  description: topics.description,
  color: topics.color,
  sortOrder: topics.sortOrder,
};
const inbox = (): Collection => ({ topicId: null, segment: INBOX, title: 'Tasks', description: 'Tasks without a topic', color: null, sortOrder: -1 });

export async function listCollections(q: Queryable, userId: string): Promise<Collection[]> {
  const rows = await orm(q).select(topicCollection).from(topics).where(eq(topics.userId, userId)).orderBy(asc(topics.sortOrder), asc(topics.createdAt)).limit(1000);
  return [inbox(), ...rows];
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export async function collectionBySegment(q: Queryable, userId: string, segment: string): Promise<Collection | null> {
  if (segment === INBOX) return inbox();
  const bySegment = UUID_RE.test(segment) ? or(eq(topics.davName, segment), and(isNull(topics.davName), eq(topics.id, segment))) : eq(topics.davName, segment);
  const [row] = await orm(q)
    .select(topicCollection)
    .from(topics)
    .where(and(eq(topics.userId, userId), bySegment));
  return row ?? null;
}

export async function collectionOfTopic(q: Queryable, userId: string, topicId: string | null): Promise<Collection | null> {
  if (topicId === null) return inbox();
  const [row] = await orm(q).select(topicCollection).from(topics).where(and(eq(topics.userId, userId), eq(topics.id, topicId)));
  return row ?? null;
}

/** A task as a CalDAV resource: its fields, and the client's name, UID and kept properties (null: none given). */
export interface Member {
  task: TaskFields;
  /** the parent task's UID, for RELATED-TO */
  parentUid: string | null;
  object: { name: string; uid: string; kept: KeptJson } | null;
}

const parentObject = alias(caldavObjects, 'po');
/** The parent's UID (RELATED-TO): the one a client gave it, else ours. */
const parentUid = sql<string | null>`CASE WHEN ${tasks.parentId} IS NULL THEN NULL ELSE COALESCE((SELECT ${parentObject.uid} FROM ${caldavObjects} po WHERE ${parentObject.taskId} = ${tasks.parentId}), 'task-' || ${tasks.parentId} || '@task-service') END`;
const memberSelect = { task: getTableColumns(tasks), parentUid, object: { name: caldavObjects.name, uid: caldavObjects.uid, kept: caldavObjects.kept } };
const inCollection = (userId: string, topicId: string | null) => and(eq(tasks.userId, userId), topicId === null ? isNull(tasks.topicId) : eq(tasks.topicId, topicId));

function members(q: Queryable, where: SQL | undefined, limit: number) {
  return orm(q)
    .select(memberSelect)
    .from(tasks)
    .leftJoin(caldavObjects, eq(caldavObjects.taskId, tasks.id))
    .where(where)
    .orderBy(asc(tasks.id))
    .limit(limit)
    .then((rows) => rows.map((r) => ({ task: r.task, parentUid: r.parentUid, object: r.object?.name ? (r.object as Member['object']) : null })));
}

/** A page of a collection's members in id order, after `afterId`; only those changed since `since` when given. */
export function collectionMembers(q: Queryable, userId: string, topicId: string | null, opts: { afterId?: string | null; since?: SyncPos | null; limit: number }): Promise<Member[]> {
  return members(
    q,
    and(inCollection(userId, topicId), opts.afterId ? gt(tasks.id, opts.afterId) : undefined, opts.since ? changedSince(tasks.changeXid, opts.since) : undefined),
    opts.limit,
  );
}

/** The user's members among these ids (any collection). */
export async function membersByIds(q: Queryable, userId: string, ids: string[]): Promise<Member[]> {
  if (ids.length === 0) return [];
  return members(q, and(eq(tasks.userId, userId), sql`${tasks.id} = ANY(${sql.param(ids)}::uuid[])`), ids.length);
}

/** The task a resource name stands for (a client's name, else `<task id>.ics` for a task no client named). */
export async function taskIdByName(q: Queryable, userId: string, name: string): Promise<string | null> {
  const [named] = await orm(q).select({ id: caldavObjects.taskId }).from(caldavObjects).where(and(eq(caldavObjects.userId, userId), eq(caldavObjects.name, name)));
  if (named) return named.id;
  const m = /^(.+)\.ics$/.exec(name);
  if (!m || !UUID_RE.test(m[1]!)) return null;
  const [own] = await orm(q)
    .select({ id: tasks.id })
    .from(tasks)
    .leftJoin(caldavObjects, eq(caldavObjects.taskId, tasks.id))
    .where(and(eq(tasks.userId, userId), eq(tasks.id, m[1]!.toLowerCase()), isNull(caldavObjects.taskId)));
  return own?.id ?? null;
}

/**
 * The collection's members at these resource names (calendar-multiget), in one statement: a
 * client's name, or `<task id>.ics` of a task no client named (a client's name wins, as in taskIdByName).
 */
export async function membersByNames(q: Queryable, userId: string, topicId: string | null, names: string[]): Promise<Map<string, Member>> {
  const out = new Map<string, Member>();
  if (names.length === 0) return out;
  const ids = names.flatMap((n) => {
    const m = /^(.+)\.ics$/.exec(n);
    return m && UUID_RE.test(m[1]!) ? [m[1]!.toLowerCase()] : [];
  });
  const named = sql`${caldavObjects.name} = ANY(${sql.param(names)}::text[])`;
  const own = ids.length > 0 ? sql`(${caldavObjects.taskId} IS NULL AND ${tasks.id} = ANY(${sql.param(ids)}::uuid[]))` : sql`false`;
  const rows = await members(q, and(inCollection(userId, topicId), sql`(${named} OR ${own})`), names.length * 2);
  for (const m of rows.sort((a, b) => (a.object ? 0 : 1) - (b.object ? 0 : 1))) {
    const name = m.object?.name ?? `${m.task.id}.ics`;
    if (!out.has(name)) out.set(name, m);
  }
  return out;
}

/** The task holding a UID (a client's, or ours: `task-<id>@task-service`). */
export async function taskIdByUid(q: Queryable, userId: string, uid: string): Promise<string | null> {
  const [named] = await orm(q).select({ id: caldavObjects.taskId }).from(caldavObjects).where(and(eq(caldavObjects.userId, userId), eq(caldavObjects.uid, uid)));
  if (named) return named.id;
  const m = /^task-(.+)@task-service$/.exec(uid);
  if (!m || !UUID_RE.test(m[1]!)) return null;
  const [own] = await orm(q)
    .select({ id: tasks.id })
    .from(tasks)
    .leftJoin(caldavObjects, eq(caldavObjects.taskId, tasks.id))
    .where(and(eq(tasks.userId, userId), eq(tasks.id, m[1]!), isNull(caldavObjects.taskId)));
  return own?.id ?? null;
}

/** Lock a task row for the caller's transaction (a PUT, DELETE or MOVE compares its ETag first). */
export async function lockTask(q: Queryable, userId: string, id: string): Promise<boolean> {
  const rows = await orm(q)
    .select({ id: tasks.id })
    .from(tasks)
    .where(and(eq(tasks.userId, userId), eq(tasks.id, id)))
    .for('update');
  return rows.length > 0;
}

export async function saveObject(q: Queryable, o: { taskId: string; userId: string; name: string; uid: string; kept: KeptJson }): Promise<void> {
  await orm(q)
    .insert(caldavObjects)
    .values(o)
    .onConflictDoUpdate({ target: caldavObjects.taskId, set: { name: o.name, uid: o.uid, kept: o.kept } });
}

/** Names that left the collection since `since` and are not in it again. */
export async function removedSince(q: Queryable, userId: string, topicId: string | null, since: SyncPos): Promise<string[]> {
  const live = sql`EXISTS (SELECT 1 FROM ${tasks} LEFT JOIN ${caldavObjects} ON ${caldavObjects.taskId} = ${tasks.id}
    WHERE ${inCollection(userId, topicId)} AND COALESCE(${caldavObjects.name}, ${tasks.id}::text || '.ics') = ${caldavTombstones.name})`;
  const rows = await orm(q)
    .selectDistinct({ name: caldavTombstones.name })
    .from(caldavTombstones)
    .where(
      and(
        eq(caldavTombstones.userId, userId),
        topicId === null ? isNull(caldavTombstones.topicId) : eq(caldavTombstones.topicId, topicId),
        changedSince(caldavTombstones.changeXid, since),
        sql`NOT ${live}`,
      ),
    )
    .limit(100_000);
  return rows.map((r) => r.name);
}

/**
 * A collection's sync position: `base`, the newest change in the collection plus one, and `pending`,
 * the transactions still in flight in this statement's snapshot whose ids are below `base` (one of
 * them may yet commit a change to the collection with an id below `base`). "Changed since" is then
 * `change_xid >= base OR change_xid IN pending`: every change not visible to the snapshot is in
 * one of the two, and a transaction of another user or service that is in flight does not move
 * the token while it does not touch the collection (the snapshot's xmin did, and the next sync
 * reported every change after it again). More than MAX_PENDING in flight: the token is the
 * snapshot's xmin, as before (correct, reports more than changed).
 */
export interface SyncPos {
  base: string;
  pending: string[];
}

export const MAX_PENDING = 16;

/** A sync position as the text of a token: `<base>` or `<base>-<xid>-<xid>…`. */
export const posText = (p: SyncPos): string => [p.base, ...p.pending].join('-');

/** The sync position as text (getctag, the sync-token property). */
export async function syncXid(q: Queryable, userId: string, topicId: string | null): Promise<string> {
  return posText((await syncState(q, userId, topicId)).pos);
}

/** The sync position, and the first transaction id not yet handed out (a token beyond it was never ours). */
export async function syncState(q: Queryable, userId: string, topicId: string | null): Promise<{ pos: SyncPos; next: string }> {
  const newest = (table: typeof tasks | typeof caldavTombstones) =>
    sql`(SELECT max(${table.changeXid}::text::bigint) FROM ${table} WHERE ${table.userId} = ${userId} AND ${topicId === null ? sql`${table.topicId} IS NULL` : sql`${table.topicId} = ${topicId}`})`;
  const [row] = await orm(q)
    .execute<{ base: string; pending: string[]; xmin: string; next: string }>(
      sql`SELECT b.base::text AS base, pg_snapshot_xmin(b.s)::text AS xmin, pg_snapshot_xmax(b.s)::text AS next,
            ARRAY(SELECT x::text FROM pg_snapshot_xip(b.s) x WHERE x::text::bigint < b.base ORDER BY 1 LIMIT ${MAX_PENDING + 1}) AS pending
          FROM (SELECT s, COALESCE(GREATEST(${newest(tasks)}, ${newest(caldavTombstones)}), 0) + 1 AS base FROM pg_current_snapshot() s) b`,
    )
    .then((r) => r.rows);
  const { base, pending, xmin, next } = row!;
  const pos = pending.length > MAX_PENDING ? { base: BigInt(xmin) < BigInt(base) ? xmin : base, pending: [] } : { base, pending: pending.sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1)) };
  return { pos, next };
}

/** change_xid changed since a sync position. */
export function changedSince(col: SQL | typeof tasks.changeXid | typeof caldavTombstones.changeXid, pos: SyncPos): SQL {
  if (pos.pending.length === 0) return sql`${col} >= ${pos.base}::xid8`;
  return sql`(${col} >= ${pos.base}::xid8 OR ${col} = ANY(${sql.param(pos.pending)}::xid8[]))`;
}

/** Delete tombstones older than `days` (tokens that old have expired). */
export async function purgeTombstones(q: Queryable, days: number): Promise<number> {
  const r = await orm(q)
    .delete(caldavTombstones)
    .where(lt(caldavTombstones.createdAt, sql`now() - make_interval(days => ${days})`));
  return r.rowCount ?? 0;
}

