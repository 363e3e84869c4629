import type { OutboxRowValues, PoolClient } from '@tasksvc/runtime';

/**
 * SQL for tasks and completions. Every statement is scoped by user_id; date columns are read as
 * text (`::text`) so a calendar date never passes through a JS Date in the server's zone.
 */

type Queryable = Pick<PoolClient, 'query'>;

export interface TaskRow {
  id: string;
  user_id: string;
  topic_id: string | null;
  title: string;
  notes: string | null;
  type: 'ONE_TIME' | 'RECURRING' | 'DAILY_ELIGIBLE';
  priority: 'HIGH' | 'NORMAL' | 'SOMEDAY';
  recurrence_type: 'INTERVAL' | 'WEEKDAY' | 'MONTHLY' | 'YEARLY' | 'NTH_WEEKDAY' | null;
  recurrence_interval: number | null;
  recurrence_weekdays: number[] | null;
  recurrence_week_of_month: number | null;
  recurrence_fixed: boolean;
  recurrence_anchor: string | null;
  due_date: string | null;
  next_due_date: string | null;
  completed_at: Date | null;
  coin_value: number;
  is_daily_quest: boolean;
  daily_quest_date: string | null;
  postpone_count: number;
  estimated_minutes: number | null;
  snoozed_until: string | null;
  paused_at: Date | null;
  paused_until: string | null;
  energy_level: 'HIGH' | 'MEDIUM' | 'LOW' | null;
  sort_order: number;
  created_at: Date;
  updated_at: Date;
  /** not the first open task of a sequential topic (computed) */
  blocked: boolean;
}

/** Writable columns and how PATCH-style updates may set them. */
export type TaskColumns = Partial<Omit<TaskRow, 'id' | 'user_id' | 'created_at' | 'updated_at' | 'blocked'>>;
const WRITABLE = new Set<string>([
  'topic_id', 'title', 'notes', 'type', 'priority', 'recurrence_type', 'recurrence_interval', 'recurrence_weekdays', 'recurrence_week_of_month',
  'recurrence_fixed', 'recurrence_anchor', 'due_date', 'next_due_date', 'completed_at', 'coin_value', 'postpone_count', 'estimated_minutes',
  'snoozed_until', 'paused_at', 'paused_until', 'energy_level', 'sort_order',
]);

const COLS = `t.id, t.user_id, t.topic_id, t.title, t.notes, t.type, t.priority, t.recurrence_type, t.recurrence_interval,
  t.recurrence_weekdays, t.recurrence_week_of_month, t.recurrence_fixed, t.recurrence_anchor::text, t.due_date::text,
  t.next_due_date::text, t.completed_at, t.coin_value, t.is_daily_quest, t.daily_quest_date::text, t.postpone_count,
  t.estimated_minutes, t.snoozed_until::text, t.paused_at, t.paused_until::text, t.energy_level, t.sort_order, t.created_at, t.updated_at`;

/**
 * Sequential topics: a task is blocked while an earlier open task of the same topic exists. Snoozed
 * tasks do not block (reference), and neither do RECURRING ones, which are never "done" and would
 * otherwise block the rest of the topic forever.
 */
const blocked = (today: string) => `(t.completed_at IS NULL AND t.topic_id IS NOT NULL AND EXISTS (
    SELECT 1 FROM tasks.topics tp JOIN tasks.tasks u ON u.user_id = t.user_id AND u.topic_id = tp.id
    WHERE tp.id = t.topic_id AND tp.sequential AND u.id <> t.id AND u.completed_at IS NULL AND u.type <> 'RECURRING'
      AND (u.snoozed_until IS NULL OR u.snoozed_until <= ${today}::date)
      AND (u.sort_order, u.created_at, u.id) < (t.sort_order, t.created_at, t.id))) AS blocked`;

export async function getTask(db: Queryable, userId: string, id: string, today: string): Promise<TaskRow | null> {
  const { rows } = await db.query<TaskRow>(`SELECT ${COLS}, ${blocked('$3')} FROM tasks.tasks t WHERE t.id = $1 AND t.user_id = $2`, [id, userId, today]);
  return rows[0] ?? null;
}

export interface TaskFilters {
  /** a topic id, or 'none' for tasks without a topic */
  topicId?: string | undefined;
  type?: string | undefined;
  priority?: string | undefined;
  completed?: boolean | undefined;
  snoozed?: boolean | undefined;
  dueBefore?: string | undefined;
  dueAfter?: string | undefined;
  limit: number;
  offset: number;
}

/**
 * A page of the user's tasks with the total, and the profile's timezone read in the same statement
 * (`zone`, null without a profile) so a caller that guessed the zone for `today` can tell. The total
 * is its own count (an index-only scan) rather than a window over the page query, which would read
 * every task of the user to count them; the profile row carries both, so an empty page (or one past
 * the end) still answers the zone and the total.
 */
export async function listTasks(db: Queryable, userId: string, f: TaskFilters, today: string): Promise<{ rows: TaskRow[]; total: number; zone: string | null }> {
  const args: unknown[] = [userId, today];
  const where = ['t.user_id = $1'];
  const arg = (v: unknown) => `$${args.push(v)}`;
  if (f.topicId === 'none') where.push('t.topic_id IS NULL');
  else if (f.topicId) where.push(`t.topic_id = ${arg(f.topicId)}`);
  if (f.type) where.push(`t.type = ${arg(f.type)}`);
  if (f.priority) where.push(`t.priority = ${arg(f.priority)}`);
  if (f.completed !== undefined) where.push(f.completed ? 't.completed_at IS NOT NULL' : 't.completed_at IS NULL');
  if (f.snoozed === false) where.push('(t.snoozed_until IS NULL OR t.snoozed_until <= $2::date)');
  if (f.dueBefore) where.push(`COALESCE(t.next_due_date, t.due_date) <= ${arg(f.dueBefore)}::date`);
  if (f.dueAfter) where.push(`COALESCE(t.next_due_date, t.due_date) >= ${arg(f.dueAfter)}::date`);
  const cond = where.join(' AND ');
  const { rows } = await db.query<TaskRow & { total: string; zone: string }>(
    `SELECT page.*, z.timezone AS zone, (SELECT count(*) FROM tasks.tasks t WHERE ${cond}) AS total FROM tasks.profiles z LEFT JOIN LATERAL (
       SELECT ${COLS}, ${blocked('$2')} FROM tasks.tasks t WHERE ${cond}
       ORDER BY t.sort_order, t.created_at, t.id LIMIT ${arg(f.limit)} OFFSET ${arg(f.offset)}
     ) page ON true WHERE z.user_id = $1`,
    args,
  );
  const first = rows[0];
  if (!first) return { rows: [], total: 0, zone: null };
  // an empty page is the one row of the profile with no task in it
  const page: TaskRow[] = first.id ? rows : [];
  return { rows: page, total: Number(first.total), zone: first.zone };
}

/** The create statement per column set, built once: the same text object each time keeps its prepared-statement lookup cheap. */
const insertStatements = new Map<string, string>();

function insertStatement(schema: string, names: string[]): string {
  const key = `${schema}:${names.join(',')}`;
  let text = insertStatements.get(key);
  if (text === undefined) {
    const first = 9;
    text = `WITH p AS (
       UPDATE tasks.profiles SET total_tasks_created = total_tasks_created + 1, next_sort_order = next_sort_order + 1
       WHERE user_id = $1 AND ($6::text IS NULL OR timezone = $6)
         AND ($7::uuid IS NULL OR EXISTS (SELECT 1 FROM tasks.topics WHERE id = $7 AND user_id = $1))
       RETURNING next_sort_order - 1 AS sort_order
     ), t AS (
       INSERT INTO tasks.tasks AS t (user_id, updated_at, sort_order, ${names.join(', ')})
       SELECT $1, $${names.indexOf('created_at') + first}, p.sort_order, ${names.map((_, i) => `$${i + first}`).join(', ')} FROM p
       RETURNING ${COLS}, ${blocked('$2')}
     ), o AS (
       INSERT INTO "${schema}".outbox (id, subject, payload, traceparent) SELECT $3, $4, $5, $8 FROM t
     )
     SELECT t.*, z.timezone AS zone FROM tasks.profiles z LEFT JOIN t ON true WHERE z.user_id = $1`;
    insertStatements.set(key, text);
  }
  return text;
}

/** What `insertTask` found: the new task, or why there is none (`row` null). */
export interface InsertOutcome {
  row: TaskRow | null;
  /** the profile's timezone; null when the user has no profile yet */
  zone: string | null;
}

/**
 * Create a task in one statement (atomic by itself, no explicit transaction): count it on the
 * profile and take the next list position there, insert it, and insert its event's outbox row.
 * Nothing is written unless the profile exists, its timezone is `zone` (the one the caller computed
 * "today" and the schedule in; null: the request named its own zone) and the topic, if any, is the
 * user's. Then `row` is null and `zone` tells the caller which of those failed.
 */
export async function insertTask(
  db: Queryable,
  userId: string,
  cols: TaskColumns & Pick<TaskRow, 'id' | 'title' | 'type' | 'created_at'>,
  today: string,
  outbox: { schema: string; row: OutboxRowValues },
  zone: string | null,
): Promise<InsertOutcome> {
  const names = Object.keys(cols).filter((k) => (WRITABLE.has(k) && k !== 'sort_order') || k === 'id' || k === 'created_at');
  const values = names.map((k) => (cols as Record<string, unknown>)[k]);
  const { rows } = await db.query<TaskRow & { zone: string }>(
    insertStatement(outbox.schema, names),
    [userId, today, outbox.row.id, outbox.row.subject, outbox.row.payload, zone, cols.topic_id ?? null, outbox.row.traceparent, ...values],
  );
  const r = rows[0];
  if (!r) return { row: null, zone: null };
  const { zone: found, ...row } = r;
  return { row: row.id === null ? null : row, zone: found };
}

/**
 * Update columns of one task, optionally only while `guard` holds (a conditional update: the
 * guard is re-checked on the latest row version, so of two racing completions exactly one wins).
 */
export async function updateTask(db: Queryable, userId: string, id: string, cols: TaskColumns, today: string, guard?: string, guardArgs: unknown[] = []): Promise<TaskRow | null> {
  const names = Object.keys(cols).filter((k) => WRITABLE.has(k));
  const args: unknown[] = [id, userId, today, ...guardArgs];
  const sets = names.map((k) => `${k} = $${args.push((cols as Record<string, unknown>)[k])}`);
  sets.push('updated_at = now()');
  const { rows } = await db.query<TaskRow>(
    `UPDATE tasks.tasks AS t SET ${sets.join(', ')} WHERE t.id = $1 AND t.user_id = $2${guard ? ` AND (${guard})` : ''} RETURNING ${COLS}, ${blocked('$3')}`,
    args,
  );
  return rows[0] ?? null;
}

export async function deleteTask(db: Queryable, userId: string, id: string): Promise<TaskRow | null> {
  const { rows } = await db.query<TaskRow>(`DELETE FROM tasks.tasks AS t WHERE t.id = $1 AND t.user_id = $2 RETURNING ${COLS}, false AS blocked`, [id, userId]);
  return rows[0] ?? null;
}

/** The user's tasks among `ids` (ids that are not theirs are simply absent). */
export async function tasksByIds(db: Queryable, userId: string, ids: string[], today: string): Promise<TaskRow[]> {
  const { rows } = await db.query<TaskRow>(`SELECT ${COLS}, ${blocked('$3')} FROM tasks.tasks t WHERE t.user_id = $1 AND t.id = ANY($2::uuid[]) ORDER BY t.sort_order, t.created_at, t.id`, [userId, ids, today]);
  return rows;
}

/** Tasks for the iCal feed: open dated tasks and every RECURRING task. */
export async function feedTasks(db: Queryable, userId: string, limit: number): Promise<TaskRow[]> {
  const { rows } = await db.query<TaskRow>(
    `SELECT ${COLS}, false AS blocked FROM tasks.tasks t
     WHERE t.user_id = $1 AND ((t.type = 'RECURRING' AND t.next_due_date IS NOT NULL) OR (t.type <> 'RECURRING' AND t.completed_at IS NULL AND t.due_date IS NOT NULL))
     ORDER BY COALESCE(t.next_due_date, t.due_date), t.id LIMIT $2`,
    [userId, limit],
  );
  return rows;
}

export async function setTaskOrder(db: Queryable, userId: string, topicId: string, taskIds: string[]): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE tasks.tasks t SET sort_order = o.ord - 1, updated_at = now() FROM unnest($3::uuid[]) WITH ORDINALITY AS o(id, ord)
     WHERE t.id = o.id AND t.user_id = $1 AND t.topic_id = $2`,
    [userId, topicId, taskIds],
  );
  return rowCount ?? 0;
}

/** Detach a topic's tasks before the topic goes (so each detached task can emit task.updated). */
export async function detachTopic(db: Queryable, userId: string, topicId: string, today: string): Promise<TaskRow[]> {
  const { rows } = await db.query<TaskRow>(`UPDATE tasks.tasks AS t SET topic_id = NULL, updated_at = now() WHERE t.user_id = $1 AND t.topic_id = $2 RETURNING ${COLS}, ${blocked('$3')}`, [userId, topicId, today]);
  return rows;
}

// ─── completions ───────────────────────────────────────────────────────────────────────────

export interface CompletionRow {
  id: string;
  task_id: string | null;
  completed_at: Date;
  local_date: string;
  coins_awarded: number;
  previous_next_due_date: string | null;
  previous_anchor: string | null;
}

export async function insertCompletion(
  db: Queryable,
  c: { taskId: string; userId: string; completedAt: Date; localDate: string; coins: number; previousNextDueDate: string | null; previousAnchor: string | null },
): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO tasks.task_completions (task_id, user_id, completed_at, local_date, coins_awarded, previous_next_due_date, previous_anchor)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
    [c.taskId, c.userId, c.completedAt, c.localDate, c.coins, c.previousNextDueDate, c.previousAnchor],
  );
  return rows[0]!.id;
}

/** Remove and return the task's latest completion. */
export async function popLatestCompletion(db: Queryable, userId: string, taskId: string): Promise<CompletionRow | null> {
  const { rows } = await db.query<CompletionRow>(
    `DELETE FROM tasks.task_completions WHERE id = (
       SELECT id FROM tasks.task_completions WHERE task_id = $1 AND user_id = $2 ORDER BY created_at DESC, id DESC LIMIT 1 FOR UPDATE)
     RETURNING id, task_id, completed_at, local_date::text, coins_awarded, previous_next_due_date::text, previous_anchor::text`,
    [taskId, userId],
  );
  return rows[0] ?? null;
}
