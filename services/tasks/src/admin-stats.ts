import { tasksAdminStatsRpc, type TasksAdminStats } from '@tasksvc/proto';
import type { Bus, Pool, Subscription } from '@tasksvc/runtime';

/**
 * `tasks.admin.stats` for the admin page (asked by the auth service). Aggregates only: counts over
 * the tasks schema, never a title, note or any other row content.
 */
export async function tasksAdminStats(pool: Pool): Promise<TasksAdminStats> {
  const { rows } = await pool.query<{
    tasks_total: number;
    tasks_open: number;
    tasks_completed: number;
    users_with_tasks: number;
    completions_total: number;
    completions_7d: number;
    completions_30d: number;
  }>(
    `SELECT t.tasks_total, t.tasks_open, t.tasks_completed, t.users_with_tasks, c.completions_total, c.completions_7d, c.completions_30d
       FROM (SELECT count(*)::int AS tasks_total,
                    count(*) FILTER (WHERE completed_at IS NULL)::int AS tasks_open,
                    count(*) FILTER (WHERE completed_at IS NOT NULL)::int AS tasks_completed,
                    count(DISTINCT user_id)::int AS users_with_tasks
               FROM tasks.tasks) t,
            (SELECT count(*)::int AS completions_total,
                    count(*) FILTER (WHERE completed_at > now() - interval '7 days')::int AS completions_7d,
                    count(*) FILTER (WHERE completed_at > now() - interval '30 days')::int AS completions_30d
               FROM tasks.task_completions) c`,
  );
  const r = rows[0]!;
  return {
    tasksTotal: r.tasks_total,
    tasksOpen: r.tasks_open,
    tasksCompleted: r.tasks_completed,
    completionsTotal: r.completions_total,
    completions7d: r.completions_7d,
    completions30d: r.completions_30d,
    usersWithTasks: r.users_with_tasks,
    averageTasksPerUser: r.users_with_tasks > 0 ? Math.round((r.tasks_total / r.users_with_tasks) * 100) / 100 : null,
  };
}

export function serveTasksAdminStats(bus: Bus, pool: Pool): Subscription {
  return bus.serve(tasksAdminStatsRpc, () => tasksAdminStats(pool));
}
