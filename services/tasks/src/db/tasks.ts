import { columnName, jsonStatement, names, orm, selectList, statement, StatementCache, type JsonView, type OutboxRowValues, type Queryable, type Statement } from '@tasksvc/runtime';
import { and, desc, eq, getTableColumns, sql, type Column, type SQL } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import { MAX_SUBTASKS, task as taskView } from '@tasksvc/proto';
import { caldavObjects, caldavTombstones, profiles, taskCompletions, tasks, topics } from './schema.ts';

/**
 * SQL for tasks and completions. Every statement is scoped by user_id. A task row carries the
 * computed `blocked` (a subquery), so the statements that return task rows are `sql` templates over
 * the schema's columns, each rendered once per shape (which filters, which columns) and prepared by
 * the pool: a create and a list are one statement each (hot-path.test.ts).
 */

export type TaskRow = typeof tasks.$inferSelect & {
  /** not the first open task of a sequential topic (computed) */
  blocked: boolean;
};

/** What a create or an update may set: every column but the keys, the timestamps, the quest flags (kept by the quest), the subtask counters (kept by a trigger) and the change stamp. */
export type TaskColumns = Partial<Omit<typeof tasks.$inferInsert, 'id' | 'userId' | 'createdAt' | 'updatedAt' | 'isDailyQuest' | 'dailyQuestDate' | 'changeXid' | 'subtaskCount' | 'subtasksDone'>>;
const COLUMNS = getTableColumns(tasks);
type ColumnKey = keyof typeof COLUMNS;
/** each column's name in the database, by its key (found once: drizzle converts the case at every call) */
const COLUMN_NAMES = Object.fromEntries(Object.entries(COLUMNS).map(([k, c]) => [k, columnName(c)])) as Record<ColumnKey, string>;
const NOT_WRITABLE = new Set<string>(['id', 'userId', 'createdAt', 'updatedAt', 'isDailyQuest', 'dailyQuestDate', 'changeXid', 'subtaskCount', 'subtasksDone']);
const isWritable = (k: string): k is keyof TaskColumns & ColumnKey => k in COLUMNS && !NOT_WRITABLE.has(k);

/** The task columns among `fields` that are set (a request body's, say): a new column reaches the statements without a change here. */
export function writableColumns(fields: object): TaskColumns {
  return Object.fromEntries(Object.entries(fields).filter(([k, v]) => v !== undefined && isWritable(k)));
}

const p = sql.placeholder;
/** A column's value in a create or an update: its own placeholder name space, apart from the statement's other values. */
const value = (k: string) => p(`set.${k}`);
/** A jsonb column's value goes as its JSON text (pg would send a JavaScript array as a PostgreSQL array). */
const driverValue = (k: string, v: unknown) => (v !== null && COLUMNS[k as ColumnKey]?.dataType === 'json' ? JSON.stringify(v) : v);
const values = (cols: object) => Object.fromEntries(Object.entries(cols).map(([k, v]) => [`set.${k}`, driverValue(k, v)]));
const t = alias(tasks, 't');
const u = alias(tasks, 'u');
const tp = alias(topics, 'tp');
const z = alias(profiles, 'z');
/** a subtask's parent */
const pa = alias(tasks, 'pa');
const kid = alias(tasks, 'kid');

/**
 * Sequential topics: a task is blocked while an earlier open task of the same topic exists. Snoozed
 * tasks do not block (reference), and neither do RECURRING ones, which are never "done" and would
 * otherwise block the rest of the topic forever. A topic's line is of its top-level tasks: a subtask
 * neither blocks nor is blocked (it goes with its parent). `today` is the placeholder's date.
 */
const blocked = sql<boolean>`(${t.completedAt} IS NULL AND ${t.topicId} IS NOT NULL AND ${t.parentId} IS NULL AND EXISTS (
    SELECT 1 FROM ${topics} tp JOIN ${tasks} u ON ${u.userId} = ${t.userId} AND ${u.topicId} = ${tp.id}
    WHERE ${tp.id} = ${t.topicId} AND ${tp.sequential} AND ${u.id} <> ${t.id} AND ${u.completedAt} IS NULL AND ${u.type} <> 'RECURRING' AND ${u.parentId} IS NULL
      AND (${u.snoozedUntil} IS NULL OR ${u.snoozedUntil} <= ${p('today')}::date)
      AND (${u.sortOrder}, ${u.createdAt}, ${u.id}) < (${t.sortOrder}, ${t.createdAt}, ${t.id})))`;

/** A task row of `t` as of the placeholder `today`; `gone` for a deleted one (nothing blocks it). */
const row = { ...getTableColumns(t), blocked };
const gone = { ...getTableColumns(t), blocked: sql<boolean>`false` };
const ROW = selectList(row);
const task = (query: SQL) => statement(query, row) as Statement<TaskRow>;
const ORDER = sql`${t.sortOrder}, ${t.createdAt}, ${t.id}`;

const byId = task(sql`SELECT ${ROW} FROM ${tasks} t WHERE ${t.id} = ${p('id')} AND ${t.userId} = ${p('userId')}`);

export async function getTask(q: Queryable, userId: string, id: string, today: string): Promise<TaskRow | null> {
  return (await byId.run(q, { id, userId, today })).rows[0] ?? null;
}

// the head of the task's family (its parent, else itself), locked as lockFamily locks it
const headLocked = task(
  sql`SELECT ${ROW} FROM ${tasks} t
       WHERE ${t.id} = (SELECT COALESCE(${kid.parentId}, ${kid.id}) FROM ${tasks} kid WHERE ${kid.id} = ${p('id')} AND ${kid.userId} = ${p('userId')}) AND ${t.userId} = ${p('userId')}
       FOR NO KEY UPDATE OF t`,
);

// the caller's profile, and the head of the task's family locked (as headLocked): one round trip
const profileAndHeadStatement = () =>
  statement(
    sql`WITH h AS (
          SELECT ${ROW} FROM ${tasks} t
           WHERE ${t.id} = (SELECT COALESCE(${kid.parentId}, ${kid.id}) FROM ${tasks} kid WHERE ${kid.id} = ${p('id')} AND ${kid.userId} = ${p('userId')}) AND ${t.userId} = ${p('userId')}
           FOR NO KEY UPDATE OF t
        )
        SELECT ${selectList(PROFILE_AFTER)}, h.* FROM ${profiles} LEFT JOIN h ON true WHERE ${profiles.userId} = ${p('userId')}`,
    { ...row, ...PROFILE_AFTER },
  );
let profileAndHead: ReturnType<typeof profileAndHeadStatement> | undefined;

/**
 * The user's profile (as ensureProfile reads it) and, locked as lockFamily locks it, the head of the
 * task's family (its parent, else the task itself), in one statement; `today` is the day the head's
 * `blocked` is computed for (the caller's guess of the user's "today"). Null when the user has no
 * profile yet (then nothing was locked); `head` null when there is no such task of the user.
 */
export async function profileAndLockedHead(q: Queryable, userId: string, id: string, today: string): Promise<{ profile: ProfileAfter; head: TaskRow | null } | null> {
  profileAndHead ??= profileAndHeadStatement();
  const r = (await profileAndHead.run(q, { id, userId, today })).rows[0] as Record<string, unknown> | undefined;
  if (!r) return null;
  const { task, profile } = splitRow(r);
  return { profile: profile as ProfileAfter, head: task.id ? (task as TaskRow) : null };
}

/**
 * lockFamily, then getTask: one statement when the task heads its family (has no parent): the row
 * it locked is the task, read in its latest version. A subtask is read after its parent is locked,
 * as before. Null when there is no such task of the user.
 */
export async function lockFamilyAndGet(q: Queryable, userId: string, id: string, today: string): Promise<TaskRow | null> {
  const head = (await headLocked.run(q, { id, userId, today })).rows[0];
  if (!head) return null;
  return head.id === id ? head : getTask(q, userId, id, today);
}

export interface TaskFilters {
  /** a topic id, or 'none' for tasks without a topic */
  topicId?: string | undefined;
  /** a parent's id (its subtasks), or 'none' for tasks that are not subtasks */
  parentId?: string | undefined;
  type?: string | undefined;
  priority?: string | undefined;
  completed?: boolean | undefined;
  snoozed?: boolean | undefined;
  dueBefore?: string | undefined;
  dueAfter?: string | undefined;
  limit: number;
  offset: number;
}

/** Each filter's condition, by the letter it adds to a list's shape. */
const FILTER_CONDITIONS: Record<string, SQL> = {
  n: sql`${t.topicId} IS NULL`,
  t: sql`${t.topicId} = ${p('topicId')}`,
  l: sql`${t.parentId} IS NULL`,
  u: sql`${t.parentId} = ${p('parentId')}`,
  y: sql`${t.type} = ${p('type')}`,
  p: sql`${t.priority} = ${p('priority')}`,
  c: sql`${t.completedAt} IS NOT NULL`,
  o: sql`${t.completedAt} IS NULL`,
  s: sql`(${t.snoozedUntil} IS NULL OR ${t.snoozedUntil} <= ${p('today')}::date)`,
  b: sql`COALESCE(${t.nextDueDate}, ${t.dueDate}) <= ${p('dueBefore')}::date`,
  a: sql`COALESCE(${t.nextDueDate}, ${t.dueDate}) >= ${p('dueAfter')}::date`,
};

/** Which filters a list sets (never their values): a letter each, in a fixed order. */
function listShape(f: TaskFilters): string {
  let shape = '';
  if (f.topicId === 'none') shape += 'n';
  else if (f.topicId) shape += 't';
  if (f.parentId === 'none') shape += 'l';
  else if (f.parentId) shape += 'u';
  if (f.type) shape += 'y';
  if (f.priority) shape += 'p';
  if (f.completed !== undefined) shape += f.completed ? 'c' : 'o';
  if (f.snoozed === false) shape += 's';
  if (f.dueBefore) shape += 'b';
  if (f.dueAfter) shape += 'a';
  return shape;
}

/** The conditions of a list of that shape: the user's tasks, and each filter's. */
const listWhere = (shape: string): SQL => sql.join([sql`${t.userId} = ${p('userId')}`, ...[...shape].map((k) => FILTER_CONDITIONS[k]!)], sql` AND `);

/** A task as a page shows it: the columns the API's task has (the reply's schema check would strip the others). */
export type ListedTask = Pick<TaskRow, Extract<keyof TaskRow, keyof typeof taskView.shape>>;
/**
 * A page selects only what its reply shows: change_xid (CalDAV's) and recurrence_anchor were read,
 * parsed and then stripped by the reply's schema check, 50 times a page (issue 58/61).
 */
export const LISTED = Object.fromEntries(Object.entries(row).filter(([k]) => k in taskView.shape)) as Pick<typeof row, keyof ListedTask>;
const page = { ...LISTED, total: sql<number>``, zone: sql<string>`` };
const pages = new StatementCache<JsonView<ListedTask> & { total: number; zone: string }>();

/**
 * A page of the user's tasks with the total, and the profile's timezone read in the same statement
 * (`zone`, null without a profile) so a caller that guessed the zone for `today` can tell. The total
 * is never a count over every task of the user when it can be known otherwise (counting visits a
 * heap page per task): without filters it is the profile's task count; a page that is not full ends
 * the list, so it is the offset plus the page's rows; only a full or empty filtered page counts (the
 * count is a subquery PostgreSQL runs only when that CASE branch is taken). The profile row carries
 * the zone and the total, so an empty page (or one past the end) still answers both. The rows are
 * as the API shows a task (instants as ISO strings): a page only goes out in a reply.
 */
export async function listTasks(q: Queryable, userId: string, f: TaskFilters, today: string): Promise<{ rows: JsonView<ListedTask>[]; total: number; zone: string | null }> {
  const shape = listShape(f);
  const bind = { userId, today, topicId: f.topicId, parentId: f.parentId, type: f.type, priority: f.priority, dueBefore: f.dueBefore, dueAfter: f.dueAfter, limit: f.limit, offset: f.offset };
  const list = pages.get(shape, () => {
    const where = listWhere(shape);
    // LIMIT and OFFSET as subqueries: a bare parameter there is estimated at a tenth of the user's
    // tasks in the generic plan but at its value in a custom one, so with a few thousand tasks the
    // generic plan looks dearer and PostgreSQL plans the statement afresh at every run (more than
    // half of a list's database time); hidden from both, the two cost the same and the plan is kept
    const slice = sql`SELECT ${selectList(LISTED)} FROM ${tasks} t WHERE ${where} ORDER BY ${ORDER} LIMIT (SELECT ${p('limit')}::int) OFFSET (SELECT ${p('offset')}::int)`;
    // filtered: the page's own row count (a window over the sliced rows, so over 50 rows at most, in their order)
    const [rows, total] =
      shape === ''
        ? [slice, sql`${z.taskCount}`]
        : [
            sql`SELECT s.*, count(*) OVER () AS on_page FROM (${slice}) s`,
            sql`CASE WHEN page.on_page < ${p('limit')} THEN ${p('offset')} + page.on_page ELSE (SELECT count(*) FROM ${tasks} t WHERE ${where}) END`,
          ];
    return jsonStatement(sql`SELECT page.*, ${z.timezone} AS zone, (${total})::int AS total FROM ${profiles} z LEFT JOIN LATERAL (${rows}) page ON true WHERE ${z.userId} = ${p('userId')}`, page);
  });
  const { rows } = await list.run(q, bind);
  const first = rows[0];
  if (!first) return { rows: [], total: 0, zone: null };
  // an empty page is the one row of the profile with no task in it
  // (the rows keep their total and zone: the API's task view leaves them out)
  return { rows: first.id ? rows : [], total: first.total, zone: first.zone };
}

const creates = new StatementCache<TaskRow & { zone: string }>();
/** The created row as the CTE `t` returned it (its columns, and `blocked` computed there), with the profile's zone from `p`. */
const created = { ...getTableColumns(t), blocked: sql<boolean>`t.blocked`, zone: sql<string>`p.zone` };
const zoneOf = statement(sql`SELECT ${z.timezone} AS zone FROM ${profiles} z WHERE ${z.userId} = ${p('userId')}`, { zone: z.timezone });

/**
 * The create statement for one set of columns (see insertTask). Without a topic (the usual create)
 * it leaves out the topic check and the `blocked` subquery (a task outside a topic is never
 * blocked): PostgreSQL builds every node of a plan at each run, taken or not. A subtask's (one with
 * `parentId`) checks its parent instead: the user's, not itself a subtask, open, with room for
 * another subtask, and (`checkTopic`) in the topic the request named; the subtask takes the parent's topic (its event's too) and is never
 * blocked. The parent is locked while its subtask is added, so it cannot become a subtask meanwhile.
 */
function createStatement(outboxSchema: string, keys: ColumnKey[]) {
  const inParent = keys.includes('parentId');
  const inTopic = !inParent && keys.includes('topicId');
  const insertKeys = inParent ? keys.filter((k) => k !== 'topicId') : keys;
  return creates.get(shapeOf(outboxSchema, keys), () =>
    statement(
      sql`WITH ${inParent ? sql`pa AS (
            SELECT ${pa.topicId} AS topic_id FROM ${tasks} pa
            WHERE ${pa.id} = ${p('parentId')} AND ${pa.userId} = ${p('userId')} AND ${pa.parentId} IS NULL
              AND ${pa.completedAt} IS NULL AND ${pa.subtaskCount} < ${sql.raw(String(MAX_SUBTASKS))}
              AND (NOT ${p('checkTopic')}::boolean OR ${pa.topicId} IS NOT DISTINCT FROM ${p('topicId')}::uuid)
            FOR NO KEY UPDATE
          ), ` : sql``}p AS (
            UPDATE ${profiles} SET ${names(profiles.totalTasksCreated)} = ${profiles.totalTasksCreated} + 1, ${names(profiles.nextSortOrder)} = ${profiles.nextSortOrder} + 1,
              ${names(profiles.taskCount)} = ${profiles.taskCount} + 1
            WHERE ${profiles.userId} = ${p('userId')} AND (${p('zone')}::text IS NULL OR ${profiles.timezone} = ${p('zone')})
              ${inTopic ? sql`AND (${p('topicId')}::uuid IS NULL OR EXISTS (SELECT 1 FROM ${topics} WHERE ${topics.id} = ${p('topicId')} AND ${topics.userId} = ${p('userId')}))` : sql``}
              ${inParent ? sql`AND EXISTS (SELECT 1 FROM pa)` : sql``}
            RETURNING ${profiles.nextSortOrder} - 1 AS sort_order, ${profiles.timezone} AS zone
          ), t AS (
            INSERT INTO ${tasks} AS t (${names(tasks.userId, tasks.createdAt, tasks.updatedAt, tasks.sortOrder, ...(inParent ? [tasks.topicId] : []), ...insertKeys.map((k) => COLUMNS[k]))})
            SELECT ${p('userId')}, ${p('createdAt')}, ${p('createdAt')}, p.sort_order, ${inParent ? sql`(SELECT topic_id FROM pa), ` : sql``}${sql.join(insertKeys.map(value), sql`, `)} FROM p
            RETURNING t.*, ${inTopic ? blocked : sql`false`} AS blocked
          ), o AS (
            INSERT INTO ${sql.identifier(outboxSchema)}.outbox (id, subject, payload, traceparent)
            SELECT ${p('outboxId')}, ${p('subject')}, ${inParent ? sql`jsonb_set(${p('payload')}::jsonb, '{payload,task,topicId}', COALESCE(to_jsonb(t.topic_id), 'null'::jsonb))` : p('payload')}, ${p('traceparent')} FROM t
          )
          SELECT ${selectList(created)} FROM t, p`,
      created,
    ),
  );
}

/** What `insertTask` found: the new task, or why there is none (`row` null). */
export interface InsertOutcome {
  row: TaskRow | null;
  /** the profile's timezone; null when the user has no profile yet */
  zone: string | null;
}

/** One task create: the user, the columns it sets, "today" (the zone's), its event's outbox row, and the zone to hold the profile to (null: the request named its own). */
export interface CreateArgs {
  userId: string;
  cols: TaskColumns & Pick<TaskRow, 'id' | 'title' | 'type' | 'createdAt'>;
  today: string;
  outbox: { schema: string; row: OutboxRowValues };
  zone: string | null;
}

/** The columns a create names besides the ones every create sets (user, timestamps, list position): its statement's shape. */
function keysOf(cols: CreateArgs['cols']): ColumnKey[] {
  return Object.keys(cols).filter((k): k is ColumnKey => k === 'id' || (isWritable(k) && k !== 'sortOrder'));
}

/** The key of a create statement's text: its outbox and the columns it sets. */
const shapeOf = (outboxSchema: string, keys: ColumnKey[]) => `${outboxSchema}:${keys.join(',')}`;

/** Creates of one shape can share a statement (insertTasks); null: this one cannot share. */
export function createShape(a: CreateArgs): string | null {
  return batchable(a) ? shapeOf(a.outbox.schema, keysOf(a.cols)) : null;
}

/**
 * Create a task in one statement (atomic by itself, no explicit transaction): count it on the
 * profile and take the next list position there, insert it, and insert its event's outbox row.
 * Nothing is written unless the profile exists, its timezone is `zone` (the one the caller computed
 * "today" and the schedule in; null: the request named its own zone), the topic, if any, is the
 * user's and the parent, if any, passes createStatement's checks. Then `row` is null and `zone`
 * (read by a second statement, off the usual path) tells the caller whether the zone was the cause.
 */
export async function insertTask(q: Queryable, a: CreateArgs): Promise<InsertOutcome> {
  const { createdAt, ...rest } = a.cols;
  const { rows } = await createStatement(a.outbox.schema, keysOf(a.cols)).run(q, {
    ...values(rest),
    userId: a.userId,
    createdAt,
    today: a.today,
    zone: a.zone,
    topicId: a.cols.topicId ?? null,
    parentId: a.cols.parentId ?? null,
    checkTopic: a.cols.topicId !== undefined,
    outboxId: a.outbox.row.id,
    subject: a.outbox.row.subject,
    payload: a.outbox.row.payload,
    traceparent: a.outbox.row.traceparent,
  });
  const r = rows[0];
  if (!r) return { row: null, zone: (await zoneOf.run(q, { userId: a.userId })).rows[0]?.zone ?? null };
  const { zone: found, ...row } = r;
  return { row, zone: found };
}

const batches = new StatementCache<TaskRow & { zone: string }>();

/** What a batched create carries besides its task's columns, each a field of its JSON record and of this type. */
const BATCH_EXTRAS = [
  ['user_id', 'uuid'],
  ['created_at', 'timestamptz'],
  ['zone', 'text'],
  ['outbox_id', 'uuid'],
  ['subject', 'text'],
  ['payload', 'text'],
  ['traceparent', 'text'],
] as const;

/**
 * createStatement's writes for several creates of one shape, none in a topic, each of another user:
 * the creates come as one JSON array of records (json_to_recordset types each field as its column),
 * so one statement and one commit serve them all. One JSON text is cheaper to write than a PostgreSQL
 * array per column, whose elements pg escapes one by one (the outbox payloads most). A user appears
 * once, so each profile row is updated once and hands out one list position. The profiles are also
 * named by `= ANY`: joined to the records alone (estimated at 100 rows), a table of a few hundred
 * profiles was read whole at every batch, most of the statement's cost.
 */
function batchStatement(outboxSchema: string, keys: ColumnKey[]) {
  return batches.get(shapeOf(outboxSchema, keys), () => {
    const set = keys.map((k) => COLUMNS[k]);
    // each record's fields are named as insertTasks writes them (COLUMN_NAMES)
    const fields = sql.raw([...BATCH_EXTRAS, ...keys.map((k) => [COLUMN_NAMES[k], COLUMNS[k].getSQLType()])].map(([name, type]) => `"${name}" ${type}`).join(', '));
    return statement(
      sql`WITH i AS (
            SELECT * FROM json_to_recordset(${p('creates')}::json) AS i(${fields})
          ), p AS (
            UPDATE ${profiles} SET ${names(profiles.totalTasksCreated)} = ${profiles.totalTasksCreated} + 1, ${names(profiles.nextSortOrder)} = ${profiles.nextSortOrder} + 1,
              ${names(profiles.taskCount)} = ${profiles.taskCount} + 1
            FROM i WHERE ${profiles.userId} = i.user_id AND ${profiles.userId} = ANY(${p('users')}::uuid[]) AND (i.zone IS NULL OR ${profiles.timezone} = i.zone)
            RETURNING ${profiles.userId} AS user_id, ${profiles.nextSortOrder} - 1 AS sort_order, ${profiles.timezone} AS zone
          ), t AS (
            INSERT INTO ${tasks} AS t (${names(tasks.userId, tasks.createdAt, tasks.updatedAt, tasks.sortOrder, ...set)})
            SELECT i.user_id, i.created_at, i.created_at, p.sort_order, ${sql.join(
              keys.map((k) => sql`i.${sql.identifier(COLUMN_NAMES[k])}`),
              sql`, `,
            )} FROM i JOIN p ON p.user_id = i.user_id
            RETURNING t.*, false AS blocked
          ), o AS (
            INSERT INTO ${sql.identifier(outboxSchema)}.outbox (id, subject, payload, traceparent)
            SELECT i.outbox_id, i.subject, i.payload::jsonb, i.traceparent FROM t JOIN i ON i.id = t.id
          )
          SELECT ${selectList(created)} FROM t JOIN p ON p.user_id = t.user_id`,
      created,
    );
  });
}

/** A create in a topic needs the topic checked and `blocked` computed, a subtask's its parent checked (createStatement's). */
const batchable = (a: CreateArgs) => !a.cols.topicId && !a.cols.parentId;

/**
 * insertTask for several creates of one shape (createShape), none in a topic, each of another user,
 * in one statement. Each create's task, in their order; null where nothing was written for it (no
 * profile, or another zone: insertTask on its own tells which). Atomic: if the statement fails,
 * nothing of it was written.
 */
export async function insertTasks(q: Queryable, creates: CreateArgs[]): Promise<((TaskRow & { zone: string }) | null)[]> {
  const first = creates[0];
  if (!first) return [];
  const keys = keysOf(first.cols);
  const set = keys.map((k) => [COLUMN_NAMES[k], k] as const);
  const records = creates.map((a) => {
    const o = a.outbox.row;
    const r: Record<string, unknown> = { user_id: a.userId, created_at: a.cols.createdAt, zone: a.zone, outbox_id: o.id, subject: o.subject, payload: o.payload, traceparent: o.traceparent };
    for (const [name, k] of set) r[name] = a.cols[k as keyof CreateArgs['cols']] ?? null;
    return r;
  });
  const { rows } = await batchStatement(first.outbox.schema, keys).run(q, { creates: JSON.stringify(records), users: creates.map((a) => a.userId) });
  const byId = new Map(rows.map((r) => [r.id, r]));
  return creates.map((a) => byId.get(a.cols.id) ?? null);
}

/**
 * A condition an update holds to (re-checked on the latest row version, so of two racing completions
 * exactly one wins). `childless`: the task has no subtasks (it is becoming one).
 */
export type TaskGuard = { open: true } | { completed: true } | { nextDueDate: string | null } | { childless: true };

const updates = new StatementCache<TaskRow>();

/** A change CalDAV clients see: the row's change_xid moves with it (schema.ts). */
const touched = sql`${names(tasks.changeXid)} = pg_current_xact_id()`;

/** A task's CalDAV resource name (the client's, else `<id>.ics`), for a tombstone of the row `r` (its `id`). */
const resourceName = (r: string) => sql`COALESCE((SELECT ${caldavObjects.name} FROM ${caldavObjects} WHERE ${caldavObjects.taskId} = ${sql.raw(r)}.id), ${sql.raw(r)}.id || '.ics')`;

/**
 * Update columns of one task, optionally only while `guard` holds. A new topic moves the task to
 * another CalDAV collection: the same statement leaves a tombstone in the one it left.
 */
export async function updateTask(q: Queryable, userId: string, id: string, cols: TaskColumns, today: string, guard?: TaskGuard): Promise<TaskRow | null> {
  const keys = Object.keys(cols).filter(isWritable);
  const kind = !guard ? '' : 'open' in guard ? 'open' : 'completed' in guard ? 'completed' : 'childless' in guard ? 'childless' : 'due';
  const update = updates.get(`${kind}:${keys.join(',')}`, () => {
    const sets = keys.map((k) => sql`${names(COLUMNS[k])} = ${value(k)}`);
    const check = {
      '': sql``,
      open: sql` AND ${t.completedAt} IS NULL`,
      completed: sql` AND ${t.completedAt} IS NOT NULL`,
      due: sql` AND ${t.nextDueDate} = ${p('guardDue')}::date`,
      childless: sql` AND NOT EXISTS (SELECT 1 FROM ${tasks} kid WHERE ${kid.parentId} = ${t.id})`,
    }[kind];
    const set = sql.join([...sets, sql`${names(tasks.updatedAt)} = now()`, touched], sql`, `);
    const where = sql`${t.id} = ${p('id')} AND ${t.userId} = ${p('userId')}${check}`;
    if (!keys.includes('topicId')) return task(sql`UPDATE ${tasks} AS t SET ${set} WHERE ${where} RETURNING ${ROW}`);
    // The topic the task leaves is the one of the row version this update replaces. `old` locks the
    // row and so reads its latest version: a move committed meanwhile (this statement's snapshot
    // predates it) is what is left, and gets the tombstone. `u` joins `old`, so the lock comes first
    // (a lock taken after `u` would find the row changed by its own statement and return nothing).
    return task(sql`WITH old AS (
        SELECT ${t.id}, ${t.topicId} FROM ${tasks} t WHERE ${t.id} = ${p('id')} AND ${t.userId} = ${p('userId')} FOR UPDATE
      ), u AS (
        UPDATE ${tasks} AS t SET ${set} FROM old WHERE ${where} AND ${t.id} = old.id RETURNING ${ROW}
      ), gone AS (
        INSERT INTO ${caldavTombstones} (${names(caldavTombstones.userId, caldavTombstones.topicId, caldavTombstones.name)})
        SELECT ${p('userId')}, old.topic_id, ${resourceName('old')} FROM old JOIN u ON u.id = old.id WHERE old.topic_id IS DISTINCT FROM u."topicId"
      )
      SELECT * FROM u`);
  });
  const guardDue = guard && 'nextDueDate' in guard ? guard.nextDueDate : null;
  return (await update.run(q, { ...values(cols), id, userId, today, guardDue })).rows[0] ?? null;
}

/** Delete one task with its subtasks, take them off the profile's task count and leave their CalDAV tombstones. */
const remove = statement(
  sql`WITH d AS (
        DELETE FROM ${tasks} AS t WHERE ${t.userId} = ${p('userId')} AND (${t.id} = ${p('id')} OR ${t.parentId} = ${p('id')}) RETURNING ${selectList(gone)}
      ), tomb AS (
        INSERT INTO ${caldavTombstones} (${names(caldavTombstones.userId, caldavTombstones.topicId, caldavTombstones.name)}) SELECT d."userId", d."topicId", ${resourceName('d')} FROM d
      ), c AS (
        UPDATE ${profiles} SET ${names(profiles.taskCount)} = ${profiles.taskCount} - (SELECT count(*) FROM d)::int WHERE ${profiles.userId} = ${p('userId')} AND EXISTS (SELECT 1 FROM d)
      )
      SELECT * FROM d`,
  gone,
) as Statement<TaskRow>;

/** Delete one task and its subtasks (deleting a parent deletes its subtasks); the task itself comes first. Empty: no such task of the user. */
export async function deleteTask(q: Queryable, userId: string, id: string): Promise<TaskRow[]> {
  const { rows } = await remove.run(q, { id, userId });
  return rows.sort((a, b) => (a.id === id ? -1 : b.id === id ? 1 : 0));
}

/** The parent a task is to go under, locked (FOR NO KEY UPDATE) so it cannot become a subtask meanwhile; null: no such task of the user. */
export async function lockParent(q: Queryable, userId: string, id: string) {
  const [row] = await orm(q)
    .select({ id: tasks.id, parentId: tasks.parentId, topicId: tasks.topicId, completedAt: tasks.completedAt, subtaskCount: tasks.subtaskCount })
    .from(tasks)
    .where(and(eq(tasks.id, id), eq(tasks.userId, userId)))
    .for('no key update');
  return row ?? null;
}

/** Whether the task has subtasks. */
export async function hasSubtasks(q: Queryable, userId: string, id: string): Promise<boolean> {
  const rows = await orm(q)
    .select({ id: tasks.id })
    .from(tasks)
    .where(and(eq(tasks.parentId, id), eq(tasks.userId, userId)))
    .limit(1);
  return rows.length > 0;
}

/**
 * The subtasks follow their parent's topic, each leaving a CalDAV tombstone in the list it left. As
 * in updateTask, `old` locks the rows first: the latest version of each is what is moved (one that
 * left the parent or changed topic meanwhile is re-checked) and what its tombstone names.
 */
const followTopic = task(
  sql`WITH old AS (
        SELECT ${t.id}, ${t.topicId} FROM ${tasks} t WHERE ${t.userId} = ${p('userId')} AND ${t.parentId} = ${p('parentId')} AND ${t.topicId} IS DISTINCT FROM ${p('topicId')}::uuid FOR UPDATE
      ), u AS (
        UPDATE ${tasks} AS t SET ${names(tasks.topicId)} = ${p('topicId')}, ${names(tasks.updatedAt)} = now(), ${touched}
          FROM old WHERE ${t.id} = old.id RETURNING ${ROW}
      ), gone AS (
        INSERT INTO ${caldavTombstones} (${names(caldavTombstones.userId, caldavTombstones.topicId, caldavTombstones.name)})
        SELECT ${p('userId')}, old.topic_id, ${resourceName('old')} FROM old JOIN u ON u.id = old.id
      )
      SELECT * FROM u`,
);

/** A parent moved to another topic (or none): its subtasks go with it (each leaves a CalDAV tombstone in the collection it left, as updateTask). Returns the subtasks moved. */
export async function moveSubtasksToTopic(q: Queryable, userId: string, parentId: string, topicId: string | null, today: string): Promise<TaskRow[]> {
  return (await followTopic.run(q, { userId, parentId, topicId, today })).rows;
}

/**
 * Lock the family a task belongs to: its parent when it is a subtask, else the task itself
 * (FOR NO KEY UPDATE). Whatever changes a subtask's completion or a parent with its subtasks takes
 * this first, so two such changes of one family run one after the other (the trigger that counts
 * subtasks updates the parent: taking the parent first keeps the lock order one way).
 */
export async function lockFamily(q: Queryable, userId: string, id: string): Promise<void> {
  const head = sql`(SELECT COALESCE(${kid.parentId}, ${kid.id}) FROM ${tasks} kid WHERE ${kid.id} = ${id} AND ${kid.userId} = ${userId})`;
  await orm(q)
    .select({ id: tasks.id })
    .from(tasks)
    .where(and(eq(tasks.id, head), eq(tasks.userId, userId)))
    .for('no key update');
}

const subtasksOf = task(sql`SELECT ${ROW} FROM ${tasks} t WHERE ${t.userId} = ${p('userId')} AND ${t.parentId} = ${p('parentId')} ORDER BY ${ORDER}`);

/** A task's subtasks, in their order. */
export async function listSubtasks(q: Queryable, userId: string, parentId: string, today: string): Promise<TaskRow[]> {
  return (await subtasksOf.run(q, { userId, parentId, today })).rows;
}

const markSubtasks = task(
  sql`UPDATE ${tasks} AS t SET ${names(tasks.completedAt)} = v.at, ${names(tasks.updatedAt)} = now(), ${touched}
        FROM unnest(${p('ids')}::uuid[], ${p('ats')}::timestamptz[]) AS v(id, at)
       WHERE ${t.id} = v.id AND ${t.userId} = ${p('userId')} AND ${t.parentId} = ${p('parentId')} AND (${t.completedAt} IS NULL) <> (v.at IS NULL)
      RETURNING ${ROW}`,
);

/**
 * Set (or clear: null) the completion instant of some of a parent's subtasks: a recurring parent's
 * reset, and its undo. A subtask already in that state, moved out or gone, is left alone. Returns the
 * subtasks changed.
 */
export async function setSubtasksCompleted(q: Queryable, userId: string, parentId: string, changes: { id: string; completedAt: Date | null }[], today: string): Promise<TaskRow[]> {
  if (changes.length === 0) return [];
  const { rows } = await markSubtasks.run(q, { userId, parentId, today, ids: changes.map((c) => c.id), ats: changes.map((c) => c.completedAt?.toISOString() ?? null) });
  return rows;
}

const reorderSubtasks = statement(
  sql`UPDATE ${tasks} t SET ${names(tasks.sortOrder)} = o.ord - 1, ${names(tasks.updatedAt)} = now() FROM unnest(${p('ids')}::uuid[]) WITH ORDINALITY AS o(id, ord)
      WHERE ${t.id} = o.id AND ${t.userId} = ${p('userId')} AND ${t.parentId} = ${p('parentId')}`,
);

export async function setSubtaskOrder(q: Queryable, userId: string, parentId: string, taskIds: string[]): Promise<number> {
  return (await reorderSubtasks.run(q, { userId, parentId, ids: taskIds })).rowCount;
}

const byIds = task(sql`SELECT ${ROW} FROM ${tasks} t WHERE ${t.userId} = ${p('userId')} AND ${t.id} = ANY(${p('ids')}::uuid[]) ORDER BY ${ORDER}`);

/** The user's tasks among `ids` (ids that are not theirs are simply absent). */
export async function tasksByIds(q: Queryable, userId: string, ids: string[], today: string): Promise<TaskRow[]> {
  return (await byIds.run(q, { userId, ids, today })).rows;
}

const withReminders = task(
  sql`SELECT ${ROW} FROM ${tasks} t WHERE ${t.userId} = ${p('userId')} AND ${t.reminders} <> '[]'::jsonb AND (${t.type} = 'RECURRING' OR ${t.completedAt} IS NULL) ORDER BY ${ORDER}`,
);

/** The user's tasks whose reminders may still fire (open, or recurring): their times follow the user's zone. */
export async function tasksWithReminders(q: Queryable, userId: string, today: string): Promise<TaskRow[]> {
  return (await withReminders.run(q, { userId, today })).rows;
}

const feed = statement(
  sql`SELECT ${selectList(gone)} FROM ${tasks} t
      WHERE ${t.userId} = ${p('userId')} AND ((${t.type} = 'RECURRING' AND ${t.nextDueDate} IS NOT NULL) OR (${t.type} <> 'RECURRING' AND ${t.completedAt} IS NULL AND ${t.dueDate} IS NOT NULL))
      ORDER BY COALESCE(${t.nextDueDate}, ${t.dueDate}), ${t.id} LIMIT ${p('limit')}`,
  gone,
) as Statement<TaskRow>;

/** Tasks for the iCal feed: open dated tasks and every RECURRING task. */
export async function feedTasks(q: Queryable, userId: string, limit: number): Promise<TaskRow[]> {
  return (await feed.run(q, { userId, limit })).rows;
}

const reorder = statement(
  sql`UPDATE ${tasks} t SET ${names(tasks.sortOrder)} = o.ord - 1, ${names(tasks.updatedAt)} = now() FROM unnest(${p('ids')}::uuid[]) WITH ORDINALITY AS o(id, ord)
      WHERE ${t.id} = o.id AND ${t.userId} = ${p('userId')} AND ${t.topicId} = ${p('topicId')}`,
);

export async function setTaskOrder(q: Queryable, userId: string, topicId: string, taskIds: string[]): Promise<number> {
  return (await reorder.run(q, { userId, topicId, ids: taskIds })).rowCount;
}

const detach = task(sql`UPDATE ${tasks} AS t SET ${names(tasks.topicId)} = NULL, ${names(tasks.updatedAt)} = now(), ${touched} WHERE ${t.userId} = ${p('userId')} AND ${t.topicId} = ${p('topicId')} RETURNING ${ROW}`);

const touchTopic = statement(sql`UPDATE ${tasks} AS t SET ${touched} WHERE ${t.userId} = ${p('userId')} AND ${t.topicId} = ${p('topicId')}`);

/** The topic's title is in each of its tasks' VTODO (CATEGORIES): a rename is a change CalDAV clients sync. */
export async function touchTopicTasks(q: Queryable, userId: string, topicId: string): Promise<void> {
  await touchTopic.run(q, { userId, topicId });
}

/** Detach a topic's tasks before the topic goes (so each detached task can emit task.updated). */
export async function detachTopic(q: Queryable, userId: string, topicId: string, today: string): Promise<TaskRow[]> {
  return (await detach.run(q, { userId, topicId, today })).rows;
}

// ─── promote to topic ─────────────────────────────────────────────────────────────────────

/** A task's row as `to_jsonb` gives it (keys as the columns are named): what a promoted topic keeps for the undo. */
export async function taskSnapshot(q: Queryable, userId: string, id: string): Promise<Record<string, unknown> | null> {
  const { rows } = await orm(q).execute<{ row: Record<string, unknown> }>(sql`SELECT to_jsonb(t) AS row FROM ${tasks} t WHERE ${t.id} = ${id} AND ${t.userId} = ${userId}`);
  return rows[0]?.row ?? null;
}

const regroup = task(
  sql`WITH old AS (
        SELECT ${t.id}, ${t.topicId} FROM ${tasks} t WHERE ${t.userId} = ${p('userId')} AND ${t.id} = ANY(${p('ids')}::uuid[]) FOR UPDATE
      ), u AS (
        UPDATE ${tasks} AS t SET ${names(tasks.parentId)} = ${p('parentId')}::uuid, ${names(tasks.topicId)} = ${p('topicId')}::uuid, ${names(tasks.updatedAt)} = now(), ${touched}
          FROM old WHERE ${t.id} = old.id RETURNING ${ROW}
      ), gone AS (
        INSERT INTO ${caldavTombstones} (${names(caldavTombstones.userId, caldavTombstones.topicId, caldavTombstones.name)})
        SELECT ${p('userId')}, old.topic_id, ${resourceName('old')} FROM old JOIN u ON u.id = old.id WHERE old.topic_id IS DISTINCT FROM u."topicId"
      )
      SELECT * FROM u ORDER BY u."sortOrder", u."createdAt", u.id`,
);

/**
 * Put the user's tasks `ids` under `parentId` (null: on their own) in `topicId`: promote-to-topic and
 * its undo. Each that changes collection leaves a CalDAV tombstone in the one it left (locked first, as updateTask).
 * Returns the tasks moved, in their order.
 */
export async function regroupTasks(q: Queryable, userId: string, ids: string[], to: { parentId: string | null; topicId: string | null }, today: string): Promise<TaskRow[]> {
  if (ids.length === 0) return [];
  return (await regroup.run(q, { userId, ids, parentId: to.parentId, topicId: to.topicId, today })).rows;
}

/** A column's name as a SQL string literal (a jsonb key; names are identifiers, never quotes). */
const key = (c: Parameters<typeof columnName>[0]) => sql.raw(`'${columnName(c)}'`);

const restore = statement(
  sql`WITH r AS (
        INSERT INTO ${tasks} SELECT * FROM jsonb_populate_record(NULL::${tasks}, ${p('row')}::jsonb || jsonb_build_object(
          ${key(tasks.topicId)}, (SELECT ${topics.id} FROM ${topics} WHERE ${topics.id} = (${p('row')}::jsonb ->> ${key(tasks.topicId)})::uuid AND ${topics.userId} = ${p('userId')}),
          ${key(tasks.subtaskCount)}, 0, ${key(tasks.subtasksDone)}, 0,
          ${key(tasks.isDailyQuest)}, false, ${key(tasks.dailyQuestDate)}, NULL::date,
          ${key(tasks.updatedAt)}, now(), ${key(tasks.changeXid)}, pg_current_xact_id()::text))
        WHERE (${p('row')}::jsonb ->> ${key(tasks.userId)})::uuid = ${p('userId')}
        RETURNING ${tasks.id}
      ), c AS (
        UPDATE ${profiles} SET ${names(profiles.taskCount)} = ${profiles.taskCount} + 1 WHERE ${profiles.userId} = ${p('userId')} AND EXISTS (SELECT 1 FROM r)
      )
      SELECT id FROM r`,
);

/**
 * Put back a task that promote-to-topic deleted, from its row as the topic kept it: the same id and
 * fields, in its old topic while that exists (else none), counted in the profile's task count again.
 * Its subtask counters start at zero (the trigger counts the subtasks back as they return) and it is
 * no quest (today's quest was given up with it). False: the row is not the user's.
 */
export async function restoreTask(q: Queryable, userId: string, row: Record<string, unknown>): Promise<boolean> {
  return (await restore.run(q, { userId, row: JSON.stringify(row) })).rowCount > 0;
}

// ─── postponing ────────────────────────────────────────────────────────────────────────────

const mine = (userId: string, id: string) => and(eq(tasks.id, id), eq(tasks.userId, userId));

/** The dates a postpone moves, of the user's task, locked for the caller's transaction (null: no such task). */
export async function lockTaskDates(q: Queryable, userId: string, id: string) {
  const [row] = await orm(q)
    .select({ type: tasks.type, dueDate: tasks.dueDate, nextDueDate: tasks.nextDueDate, snoozedUntil: tasks.snoozedUntil, completed: sql<boolean>`${tasks.completedAt} IS NOT NULL` })
    .from(tasks)
    .where(mine(userId, id))
    .for('update');
  return row ?? null;
}

/** Move a task to new dates, counting the postponement. */
export async function postponeDates(q: Queryable, userId: string, id: string, moved: Pick<TaskColumns, 'snoozedUntil' | 'dueDate' | 'nextDueDate'>): Promise<void> {
  await orm(q)
    .update(tasks)
    .set({ ...moved, postponeCount: sql`${tasks.postponeCount} + 1`, updatedAt: sql`now()`, changeXid: sql`pg_current_xact_id()` })
    .where(mine(userId, id));
}

/** Undo a postponement: the due date it moved (the next one, for RECURRING) and the snooze, one postponement fewer. */
export async function unpostponeDates(q: Queryable, userId: string, id: string, previous: { dueDate: string | null; snoozedUntil: string | null }): Promise<void> {
  const recurring = sql`${tasks.type} = 'RECURRING'`;
  await orm(q)
    .update(tasks)
    .set({
      dueDate: sql`CASE WHEN ${recurring} THEN ${tasks.dueDate} ELSE ${previous.dueDate}::date END`,
      nextDueDate: sql`CASE WHEN ${recurring} THEN ${previous.dueDate}::date ELSE ${tasks.nextDueDate} END`,
      snoozedUntil: previous.snoozedUntil,
      postponeCount: sql`GREATEST(${tasks.postponeCount} - 1, 0)`,
      updatedAt: sql`now()`,
      changeXid: sql`pg_current_xact_id()`,
    })
    .where(mine(userId, id));
}

// ─── completions ───────────────────────────────────────────────────────────────────────────

export type CompletionRow = typeof taskCompletions.$inferSelect;

// the profile as profiles.ts reads it (all but the feed token's hash), each column keyed `pr_<key>`
const PROFILE_AFTER = Object.fromEntries(
  Object.entries(getTableColumns(profiles))
    .filter(([k]) => k !== 'calendarFeedTokenHash')
    .map(([k, c]) => [`pr_${k}`, c]),
) as Record<string, Column>;
/**
 * A completion in one statement: the task updated (ONE_TIME, DAILY_ELIGIBLE: completed_at set while
 * it is null; RECURRING: moved on to its next due date, guarded on the one it was read with), the
 * completion recorded, its coins added to the profile (which locks and returns it).
 */
const completeStatement = (recurring: boolean) =>
  statement(
    sql`WITH u AS (
        ${
          recurring
            ? sql`UPDATE ${tasks} AS t SET ${names(tasks.nextDueDate)} = ${p('nextDueDate')}::date, ${names(tasks.recurrenceAnchor)} = ${p('anchor')}::date, ${names(tasks.snoozedUntil)} = NULL,
                ${names(tasks.updatedAt)} = now(), ${touched}
               WHERE ${t.id} = ${p('id')} AND ${t.userId} = ${p('userId')} AND ${t.nextDueDate} = ${p('guardDue')}::date`
            : sql`UPDATE ${tasks} AS t SET ${names(tasks.completedAt)} = ${p('at')}::timestamptz, ${names(tasks.updatedAt)} = now(), ${touched}
               WHERE ${t.id} = ${p('id')} AND ${t.userId} = ${p('userId')} AND ${t.completedAt} IS NULL`
        }
        RETURNING ${ROW}
      ), c AS (
        INSERT INTO ${taskCompletions} (${names(taskCompletions.id, taskCompletions.taskId, taskCompletions.userId, taskCompletions.completedAt, taskCompletions.localDate, taskCompletions.coinsAwarded, taskCompletions.previousNextDueDate, taskCompletions.previousAnchor, taskCompletions.subtaskOf, taskCompletions.partOf)}${recurring ? sql`, ${names(taskCompletions.resetSubtasks)}` : sql``})
        SELECT ${p('completionId')}::uuid, u.id, u."userId", ${p('at')}::timestamptz, ${p('localDate')}::date, ${p('coins')}::int, ${p('previousNextDueDate')}::date, ${p('previousAnchor')}::date, ${p('subtaskOf')}::uuid, ${p('partOf')}::uuid${recurring ? sql`, ${p('resetSubtasks')}::jsonb` : sql``} FROM u
        RETURNING ${taskCompletions.id}
      ), pr AS (
        UPDATE ${profiles}
           SET ${names(profiles.coins)} = CASE WHEN ${p('coins')}::int = 0 THEN ${profiles.coins} ELSE GREATEST(${profiles.coins} + ${p('coins')}::int, 0) END,
               ${names(profiles.coinsEarned)} = CASE WHEN ${p('coins')}::int = 0 THEN ${profiles.coinsEarned} ELSE GREATEST(${profiles.coinsEarned} + ${p('coins')}::int, 0) END,
               ${names(profiles.updatedAt)} = now()
         WHERE ${profiles.userId} = ${p('userId')} AND EXISTS (SELECT 1 FROM c)
        RETURNING ${selectList(PROFILE_AFTER)}
      )
      SELECT u.*, pr.* FROM u LEFT JOIN pr ON true`,
    { ...row, ...PROFILE_AFTER },
  );
const completeOnce = completeStatement(false);
let completeRecurring: typeof completeOnce | undefined;

/** What completeOpenTask did: the task after it, and the profile after the coins (locked; null when the user has none). */
export interface CompletedOnce {
  row: TaskRow;
  profile: ProfileAfter | null;
}
type ProfileAfter = Omit<typeof profiles.$inferSelect, 'calendarFeedTokenHash'>;

/**
 * Complete an open task (not RECURRING) in one statement: set completed_at while it is still null
 * (of two racing completions exactly one wins), record the completion, and add its coins to the
 * profile, which locks it for the game hooks and returns it (a completion that grants no coins
 * changes only its updated_at, as the streak update after it would). Null when the task is not the
 * user's or already completed: nothing is written.
 */
export async function completeOpenTask(
  q: Queryable,
  c: Pick<typeof taskCompletions.$inferInsert, 'id' | 'taskId' | 'userId' | 'completedAt' | 'localDate' | 'coinsAwarded' | 'previousNextDueDate' | 'previousAnchor' | 'subtaskOf' | 'partOf'>,
  today: string,
): Promise<CompletedOnce | null> {
  return completeRun(completeOnce, q, c, today, {});
}

/**
 * Complete a RECURRING task in one statement, as completeOpenTask: move it on to `advance`'s due date
 * and anchor (its snooze cleared) while its due date is still `advance.guardDue` (of two racing
 * completions exactly one wins), record the completion (with the subtasks it reset, if any) and add
 * its coins to the profile, which locks and returns it. Null when the task is not the user's or its
 * due date moved meanwhile: nothing is written.
 */
export async function advanceRecurringTask(
  q: Queryable,
  c: Pick<typeof taskCompletions.$inferInsert, 'id' | 'taskId' | 'userId' | 'completedAt' | 'localDate' | 'coinsAwarded' | 'previousNextDueDate' | 'previousAnchor' | 'subtaskOf' | 'partOf' | 'resetSubtasks'>,
  advance: { nextDueDate: string; anchor: string; guardDue: string | null },
  today: string,
): Promise<CompletedOnce | null> {
  completeRecurring ??= completeStatement(true);
  return completeRun(completeRecurring, q, c, today, { ...advance, resetSubtasks: c.resetSubtasks ? JSON.stringify(c.resetSubtasks) : null });
}

async function completeRun(
  s: typeof completeOnce,
  q: Queryable,
  c: Pick<typeof taskCompletions.$inferInsert, 'id' | 'taskId' | 'userId' | 'completedAt' | 'localDate' | 'coinsAwarded' | 'previousNextDueDate' | 'previousAnchor' | 'subtaskOf' | 'partOf'>,
  today: string,
  extra: Record<string, unknown>,
): Promise<CompletedOnce | null> {
  const { rows } = await s.run(q, {
    ...extra,
    id: c.taskId,
    userId: c.userId,
    today,
    at: c.completedAt.toISOString(),
    completionId: c.id,
    localDate: c.localDate,
    coins: c.coinsAwarded ?? 0,
    previousNextDueDate: c.previousNextDueDate ?? null,
    previousAnchor: c.previousAnchor ?? null,
    subtaskOf: c.subtaskOf ?? null,
    partOf: c.partOf ?? null,
  });
  const r = rows[0] as Record<string, unknown> | undefined;
  if (!r) return null;
  const { task, profile } = splitRow(r);
  return { row: task as TaskRow, profile: profile.userId ? (profile as ProfileAfter) : null };
}

/** A row of a task's columns and a profile's (`pr_<key>`), apart. */
function splitRow(r: Record<string, unknown>): { task: Record<string, unknown>; profile: Record<string, unknown> } {
  const task: Record<string, unknown> = {};
  const profile: Record<string, unknown> = {};
  for (const k in r) {
    if (k.startsWith('pr_')) profile[k.slice(3)] = r[k];
    else task[k] = r[k];
  }
  return { task, profile };
}

/** Remove and return the task's latest completion, or the one named (`completionId`, if it is that task's). */
export async function popCompletion(q: Queryable, userId: string, taskId: string, completionId?: string): Promise<CompletionRow | null> {
  const db = orm(q);
  const mine = and(eq(taskCompletions.taskId, taskId), eq(taskCompletions.userId, userId));
  const which = completionId
    ? and(mine, eq(taskCompletions.id, completionId))
    : eq(taskCompletions.id, sql`(${db.select({ id: taskCompletions.id }).from(taskCompletions).where(mine).orderBy(desc(taskCompletions.createdAt), desc(taskCompletions.id)).limit(1).for('update')})`);
  const [row] = await db.delete(taskCompletions).where(which).returning();
  return row ?? null;
}

// the completion's columns, each keyed `cm_<key>`
const COMPLETION_AFTER = Object.fromEntries(Object.entries(getTableColumns(taskCompletions)).map(([k, c]) => [`cm_${k}`, c])) as Record<string, Column>;
const tc = alias(taskCompletions, 'tc');
const undoOnce = (recurring: boolean) =>
  statement(
    sql`WITH l AS (
          SELECT ${tc.id} AS id, ${tc.resetSubtasks} AS reset_subtasks FROM ${taskCompletions} tc
           WHERE ${tc.taskId} = ${p('id')} AND ${tc.userId} = ${p('userId')} AND (${p('completionId')}::uuid IS NULL OR ${tc.id} = ${p('completionId')}::uuid)
           ORDER BY ${tc.createdAt} DESC, ${tc.id} DESC LIMIT 1
          FOR UPDATE
        ), plain AS (
          SELECT NOT EXISTS (
            SELECT 1 FROM l WHERE COALESCE(jsonb_array_length(l.reset_subtasks), 0) > 0
               OR EXISTS (SELECT 1 FROM ${taskCompletions} tc WHERE ${tc.partOf} = l.id AND ${tc.userId} = ${p('userId')})
          ) AS ok
        ), c AS (
          DELETE FROM ${taskCompletions} USING l, plain WHERE ${taskCompletions.id} = l.id AND plain.ok
          RETURNING ${selectList(COMPLETION_AFTER)}
        ), u AS (
          ${
            recurring
              ? sql`UPDATE ${tasks} AS t SET ${names(tasks.nextDueDate)} = c."cm_previousNextDueDate", ${names(tasks.recurrenceAnchor)} = COALESCE(c."cm_previousAnchor", c."cm_previousNextDueDate"),
                  ${names(tasks.updatedAt)} = now(), ${touched}
                  FROM c WHERE ${t.id} = ${p('id')} AND ${t.userId} = ${p('userId')} AND ${t.nextDueDate} = ${p('guardDue')}::date AND c."cm_previousNextDueDate" IS NOT NULL`
              : sql`UPDATE ${tasks} AS t SET ${names(tasks.completedAt)} = NULL, ${names(tasks.updatedAt)} = now(), ${touched}
                  WHERE ${t.id} = ${p('id')} AND ${t.userId} = ${p('userId')} AND ${t.completedAt} IS NOT NULL AND (SELECT ok FROM plain)`
          }
          RETURNING ${ROW}
        ), pr AS (
          UPDATE ${profiles}
             SET ${names(profiles.coins)} = GREATEST(${profiles.coins} - c."cm_coinsAwarded", 0), ${names(profiles.coinsEarned)} = GREATEST(${profiles.coinsEarned} - c."cm_coinsAwarded", 0),
                 ${names(profiles.updatedAt)} = now()
            FROM c WHERE ${profiles.userId} = ${p('userId')} AND c."cm_coinsAwarded" > 0 AND EXISTS (SELECT 1 FROM u)
          RETURNING ${profiles.coins} AS coins
        )
        SELECT u.*, c.*, plain.ok AS plain,
               COALESCE((SELECT coins FROM pr), (SELECT ${profiles.coins} FROM ${profiles} WHERE ${profiles.userId} = ${p('userId')}), 0) AS balance
          FROM plain LEFT JOIN u ON true LEFT JOIN c ON true`,
    { ...row, ...COMPLETION_AFTER, plain: sql<boolean>``, balance: sql<number>`` },
  );
let undoStatements: { once: ReturnType<typeof undoOnce>; recurring: ReturnType<typeof undoOnce> } | undefined;

/** What undoPlainCompletion did; `plain` false: nothing (the completion needs undoCompletion's steps). */
export interface UndoneOnce {
  plain: boolean;
  /** the completion taken away (null: the task had none, or not the one named) */
  completion: CompletionRow | null;
  /** the task after the undo; null: it was not undone (not completed; RECURRING: no completion to go back to, or its due date moved) */
  row: TaskRow | null;
  /** the profile's coins after it */
  balance: number;
}

/**
 * An undo of a completion that did nothing beyond its own task, in one statement: the task's latest
 * completion (or the one named) locked and removed, the task reopened (ONE_TIME, DAILY_ELIGIBLE:
 * completed_at cleared while it is set) or put back on the due date the completion moved it from
 * (RECURRING: guarded on the due date it was read with, `guardDue`), the completion's coins taken back
 * (never below zero), and the profile's coins after it. A completion that reset a recurring
 * parent's subtasks or was made along with others is not plain: then nothing is written
 * (`plain` false) and the caller undoes it step by step (popCompletion...). Everything is
 * scoped by user_id; when the task is not undone (`row` null) the caller rolls back.
 */
export async function undoPlainCompletion(
  q: Queryable,
  a: { userId: string; taskId: string; completionId: string | null; recurring: boolean; guardDue: string | null; today: string },
): Promise<UndoneOnce> {
  undoStatements ??= { once: undoOnce(false), recurring: undoOnce(true) };
  const { rows } = await undoStatements[a.recurring ? 'recurring' : 'once'].run(q, { id: a.taskId, userId: a.userId, completionId: a.completionId, guardDue: a.guardDue, today: a.today });
  const r = rows[0] as Record<string, unknown>;
  const task: Record<string, unknown> = {};
  const completion: Record<string, unknown> = {};
  for (const k in r) {
    if (k === 'plain' || k === 'balance') continue;
    if (k.startsWith('cm_')) completion[k.slice(3)] = r[k];
    else task[k] = r[k];
  }
  return {
    plain: r.plain as boolean,
    completion: completion.id ? (completion as CompletionRow) : null,
    row: task.id ? (task as TaskRow) : null,
    balance: r.balance as number,
  };
}

/** The completions made along with `completionId` (undoing it undoes them). */
export async function completionsPartOf(q: Queryable, userId: string, completionId: string): Promise<CompletionRow[]> {
  return orm(q)
    .select()
    .from(taskCompletions)
    .where(and(eq(taskCompletions.partOf, completionId), eq(taskCompletions.userId, userId)));
}

// ─── reminders ─────────────────────────────────────────────────────────────────────────────

const forReminders = { ...getTableColumns(t), blocked: sql<boolean>`false`, zone: sql<string>`COALESCE(${z.timezone}, 'UTC')`, vacationStartDate: z.vacationStartDate, vacationEndDate: z.vacationEndDate };
const remindersOf = statement(
  sql`SELECT ${selectList(forReminders)} FROM ${tasks} t LEFT JOIN ${profiles} z ON ${z.userId} = ${t.userId} WHERE ${t.id} = ANY(${p('ids')}::uuid[])`,
  forReminders,
) as Statement<TaskRow & { zone: string; vacationStartDate: string | null; vacationEndDate: string | null }>;

/** The tasks whose reminders are due, with their owner's zone and vacation (the scheduler's question; checked against each reminder's user). */
export async function tasksForReminders(q: Queryable, ids: string[]) {
  return (await remindersOf.run(q, { ids })).rows;
}
