import type { Queryable } from '@tasksvc/runtime';

/**
 * Completed tasks of each of `userIds`, each with its completion row, written straight into the
 * tasks schema as years of use would have left them (the achievements' test and the complete
 * bench's `--history`). The completions are spread over the `spreadDays` before now (0: all now).
 */
export async function seedCompletions(
  q: Queryable,
  userIds: string[],
  perUser: number,
  o: { priority?: 'HIGH' | 'NORMAL'; imported?: boolean; subtaskOf?: string | null; quest?: boolean; spreadDays?: number } = {},
): Promise<void> {
  await q.query(
    `WITH t AS (
       INSERT INTO tasks.tasks (user_id, title, type, priority, coin_value, completed_at)
       SELECT u, 'done ' || i, 'ONE_TIME', $3, 2, now() - (i * $7::float8 / $2) * interval '1 day'
         FROM unnest($1::uuid[]) AS u, generate_series(1, $2) AS i
       RETURNING id, user_id, completed_at
     )
     INSERT INTO tasks.task_completions (task_id, user_id, completed_at, local_date, coins_awarded, imported, subtask_of, was_daily_quest)
     SELECT id, user_id, completed_at, completed_at::date, 2, $4, $5, $6 FROM t`,
    [userIds, perUser, o.priority ?? 'NORMAL', o.imported ?? false, o.subtaskOf ?? null, o.quest ?? false, o.spreadDays ?? 0],
  );
}
