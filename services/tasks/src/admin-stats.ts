import { tasksAdminStatsRpc, type TasksAdminStats } from '@tasksvc/proto';
import type { Bus, Pool, Subscription } from '@tasksvc/runtime';
import { ACHIEVEMENTS } from './game/domain/achievements.ts';
import { levelForCoins } from './game/domain/levels.ts';

/**
 * `tasks.admin.stats` for the admin page (asked by the auth service). Aggregates only: counts over
 * the tasks schema, never a title, note or any other row content; users appear by id and coins only.
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
  const [top, unlocks] = await Promise.all([
    pool.query<{ user_id: string; coins: number; completed: number }>(
      `SELECT p.user_id, p.coins, (SELECT count(*)::int FROM tasks.task_completions c WHERE c.user_id = p.user_id) AS completed
         FROM tasks.profiles p ORDER BY p.coins DESC, p.user_id LIMIT 10`,
    ),
    pool.query<{ key: string; users: number }>('SELECT achievement_key AS key, count(*)::int AS users FROM tasks.user_achievements GROUP BY achievement_key'),
  ]);
  const unlockedBy = new Map(unlocks.rows.map((u) => [u.key, u.users]));
  return {
    tasksTotal: r.tasks_total,
    tasksOpen: r.tasks_open,
    tasksCompleted: r.tasks_completed,
    completionsTotal: r.completions_total,
    completions7d: r.completions_7d,
    completions30d: r.completions_30d,
    usersWithTasks: r.users_with_tasks,
    averageTasksPerUser: r.users_with_tasks > 0 ? Math.round((r.tasks_total / r.users_with_tasks) * 100) / 100 : null,
    topUsers: top.rows.map((u) => ({ userId: u.user_id, coins: u.coins, level: levelForCoins(u.coins), tasksCompleted: u.completed })),
    achievements: ACHIEVEMENTS.map((a) => ({ key: a.key, title: a.title, users: unlockedBy.get(a.key) ?? 0 })),
  };
}

export function serveTasksAdminStats(bus: Bus, pool: Pool): Subscription {
  return bus.serve(tasksAdminStatsRpc, () => tasksAdminStats(pool));
}
