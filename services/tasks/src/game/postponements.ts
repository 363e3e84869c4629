import { AppError } from '@tasksvc/proto';
import type { PoolClient } from '@tasksvc/runtime';
import { addDays } from './domain/dates.ts';
import { canPostpone, postponedDates, type TaskType } from './domain/quest.ts';

type Db = Pick<PoolClient, 'query'>;

/** Where a postponement came from: only the quest's own can be restored through the quest. */
export type PostponeVia = 'quest' | 'task';

/** Postponements of `localDate` that still count against the daily limit (restored ones do not). */
export async function postponesOn(db: Db, userId: string, localDate: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM tasks.quest_postponements WHERE user_id = $1 AND local_date = $2 AND restored_at IS NULL',
    [userId, localDate],
  );
  return rows[0]!.n;
}

/**
 * Postpone one task to tomorrow (reference §4) against the user's one daily limit, whichever route
 * asks. The profile row lock serialises a user's postpones, so concurrent requests cannot slip past
 * the limit; the task row lock keeps the recorded previous dates exact for a restore.
 */
export async function postponeTask(c: Db, userId: string, today: string, taskId: string, via: PostponeVia): Promise<void> {
  const profile = await c.query<{ postpone_limit: number }>('SELECT postpone_limit FROM tasks.profiles WHERE user_id = $1 FOR UPDATE', [userId]);
  const limit = profile.rows[0]?.postpone_limit;
  const { rows } = await c.query<{ type: TaskType; due_date: string | null; next_due_date: string | null; snoozed_until: string | null; completed: boolean }>(
    `SELECT type, due_date::text, next_due_date::text, snoozed_until::text, completed_at IS NOT NULL AS completed
       FROM tasks.tasks WHERE id = $1 AND user_id = $2 FOR UPDATE`,
    [taskId, userId],
  );
  const task = rows[0];
  if (!task || limit === undefined) throw new AppError('TASKS_NOT_FOUND', 'task not found');
  if (task.completed) throw new AppError('CONFLICT', 'a completed task cannot be postponed');
  if (!canPostpone(await postponesOn(c, userId, today), limit)) throw new AppError('LIMIT_REACHED', `daily postpone limit of ${limit} reached`);
  const moved = postponedDates(task, addDays(today, 1));
  await c.query(
    `INSERT INTO tasks.quest_postponements (user_id, task_id, local_date, previous_due_date, previous_snoozed_until, via)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [userId, taskId, today, task.type === 'RECURRING' ? task.next_due_date : task.due_date, task.snoozed_until, via],
  );
  await c.query(
    `UPDATE tasks.tasks SET snoozed_until = $3, due_date = $4, next_due_date = $5, postpone_count = postpone_count + 1, updated_at = now()
      WHERE id = $1 AND user_id = $2`,
    [taskId, userId, moved.snoozedUntil, moved.dueDate, moved.nextDueDate],
  );
}
