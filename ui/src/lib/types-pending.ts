/**
 * Interim: the auth contract (admin statistics) is still being committed to proto. This mirrors
 * proto/src/auth.ts as declared there; types.ts switches to importing it from proto once it is on
 * main, and this file goes away.
 */
export interface AdminStats {
  generatedAt: string;
  users: { total: number; new7d: number; new30d: number; active7d: number; active30d: number; byProvider: { provider: string; users: number }[]; withSecondFactor: number };
  tasks: {
    tasksTotal: number | null;
    tasksOpen: number | null;
    tasksCompleted: number | null;
    completionsTotal: number | null;
    completions7d: number | null;
    completions30d: number | null;
    usersWithTasks: number | null;
    averageTasksPerUser: number | null;
  } | null;
  cron: unknown;
  update: unknown;
}
