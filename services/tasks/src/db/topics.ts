import type { PoolClient } from '@tasksvc/runtime';

type Queryable = Pick<PoolClient, 'query'>;

export interface TopicRow {
  id: string;
  user_id: string;
  title: string;
  description: string | null;
  color: string | null;
  icon: string | null;
  priority: 'HIGH' | 'NORMAL' | 'SOMEDAY';
  archived: boolean;
  sequential: boolean;
  default_energy_level: 'HIGH' | 'MEDIUM' | 'LOW' | null;
  sort_order: number;
  created_at: Date;
  updated_at: Date;
  task_count: number;
  open_task_count: number;
}

export type TopicColumns = Partial<Pick<TopicRow, 'title' | 'description' | 'color' | 'icon' | 'priority' | 'archived' | 'sequential' | 'default_energy_level'>>;
const WRITABLE = new Set(['title', 'description', 'color', 'icon', 'priority', 'archived', 'sequential', 'default_energy_level']);

const COUNTS = `(SELECT count(*)::int FROM tasks.tasks k WHERE k.user_id = tp.user_id AND k.topic_id = tp.id) AS task_count,
  (SELECT count(*)::int FROM tasks.tasks k WHERE k.user_id = tp.user_id AND k.topic_id = tp.id AND k.completed_at IS NULL) AS open_task_count`;

export async function listTopics(db: Queryable, userId: string, archived: 'true' | 'false' | 'all'): Promise<TopicRow[]> {
  const filter = archived === 'all' ? '' : ` AND tp.archived = ${archived === 'true'}`;
  const { rows } = await db.query<TopicRow>(`SELECT tp.*, ${COUNTS} FROM tasks.topics tp WHERE tp.user_id = $1${filter} ORDER BY tp.sort_order, tp.created_at, tp.id LIMIT 1000`, [userId]);
  return rows;
}

export async function getTopic(db: Queryable, userId: string, id: string): Promise<TopicRow | null> {
  const { rows } = await db.query<TopicRow>(`SELECT tp.*, ${COUNTS} FROM tasks.topics tp WHERE tp.id = $1 AND tp.user_id = $2`, [id, userId]);
  return rows[0] ?? null;
}

export async function topicExists(db: Queryable, userId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM tasks.topics WHERE id = $1 AND user_id = $2', [id, userId]);
  return (rowCount ?? 0) > 0;
}

export async function insertTopic(db: Queryable, userId: string, cols: TopicColumns & { title: string }): Promise<TopicRow> {
  const names = Object.keys(cols).filter((k) => WRITABLE.has(k));
  const values = names.map((k) => (cols as Record<string, unknown>)[k]);
  const { rows } = await db.query<TopicRow>(
    `INSERT INTO tasks.topics AS tp (user_id, ${names.join(', ')}, sort_order)
     VALUES ($1, ${names.map((_, i) => `$${i + 2}`).join(', ')}, (SELECT COALESCE(MAX(sort_order), -1) + 1 FROM tasks.topics WHERE user_id = $1))
     RETURNING tp.*, 0 AS task_count, 0 AS open_task_count`,
    [userId, ...values],
  );
  return rows[0]!;
}

export async function updateTopic(db: Queryable, userId: string, id: string, cols: TopicColumns): Promise<TopicRow | null> {
  const names = Object.keys(cols).filter((k) => WRITABLE.has(k));
  const args: unknown[] = [id, userId];
  const sets = names.map((k) => `${k} = $${args.push((cols as Record<string, unknown>)[k])}`);
  sets.push('updated_at = now()');
  const { rows } = await db.query<TopicRow>(`UPDATE tasks.topics AS tp SET ${sets.join(', ')} WHERE tp.id = $1 AND tp.user_id = $2 RETURNING tp.*, ${COUNTS}`, args);
  return rows[0] ?? null;
}

export async function deleteTopic(db: Queryable, userId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM tasks.topics WHERE id = $1 AND user_id = $2', [id, userId]);
  return (rowCount ?? 0) > 0;
}

/** How many of `ids` are this user's topics. */
export async function countOwnTopics(db: Queryable, userId: string, ids: string[]): Promise<number> {
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM tasks.topics WHERE user_id = $1 AND id = ANY($2::uuid[])', [userId, ids]);
  return rows[0]!.n;
}

export async function setTopicOrder(db: Queryable, userId: string, ids: string[]): Promise<void> {
  await db.query(
    `UPDATE tasks.topics tp SET sort_order = o.ord - 1, updated_at = now() FROM unnest($2::uuid[]) WITH ORDINALITY AS o(id, ord) WHERE tp.id = o.id AND tp.user_id = $1`,
    [userId, ids],
  );
}
