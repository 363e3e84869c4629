import { tasksAdminStatsRpc, type TasksAdminStats } from '@tasksvc/proto';
import type { Bus, Pool, Subscription } from '@tasksvc/runtime';
import { adminFigures } from './db/reports.ts';
import { ACHIEVEMENTS } from './game/domain/achievements.ts';
import { levelForCoins } from './game/domain/levels.ts';

/**
 * `tasks.admin.stats` for the admin page (asked by the auth service). Aggregates only: counts over
 * the tasks schema, never a title, note or any other row content; users appear by id and coins only.
 */
export async function tasksAdminStats(pool: Pool): Promise<TasksAdminStats> {
  const r = await adminFigures(pool);
  return {
    tasksTotal: r.tasksTotal,
    tasksOpen: r.tasksOpen,
    tasksCompleted: r.tasksCompleted,
    completionsTotal: r.completionsTotal,
    completions7d: r.completions7d,
    completions30d: r.completions30d,
    usersWithTasks: r.usersWithTasks,
    averageTasksPerUser: r.usersWithTasks > 0 ? Math.round((r.tasksTotal / r.usersWithTasks) * 100) / 100 : null,
    topUsers: r.topUsers.map((u) => ({ userId: u.userId, coins: u.coins, level: levelForCoins(u.coinsEarned), tasksCompleted: u.completed })),
    achievements: ACHIEVEMENTS.map((a) => ({ key: a.key, title: a.title, users: r.unlocks.get(a.key) ?? 0 })),
  };
}

export function serveTasksAdminStats(bus: Bus, pool: Pool): Subscription {
  return bus.serve(tasksAdminStatsRpc, () => tasksAdminStats(pool));
}
