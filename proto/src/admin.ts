import { z } from 'zod';
import { deadLettersReply, defineRpc, replayReply, SERVICE_NAMES } from './bus.ts';
import { adminMetrics, cronJobsStatus } from './health.ts';
import { defineRoute, type AnyRoute } from './http.ts';

/**
 * The admin page's figures are gathered where the page is served: the gateway asks each service for
 * its own part (auth: users; tasks: task statistics; scheduler: cron runs and the update check; every
 * service: its metrics registry) and merges them. No service gathers another's.
 */

/**
 * Aggregate task statistics for the admin page, served by the tasks service. Counts only: never a
 * title or any other task content. Null fields mean the tasks schema cannot answer that yet.
 */
export const tasksAdminStats = z.object({
  tasksTotal: z.number().int().nullable(),
  tasksOpen: z.number().int().nullable(),
  tasksCompleted: z.number().int().nullable(),
  completionsTotal: z.number().int().nullable(),
  completions7d: z.number().int().nullable(),
  completions30d: z.number().int().nullable(),
  usersWithTasks: z.number().int().nullable(),
  averageTasksPerUser: z.number().nullable(),
  /** the 10 users with the most coins (ids only: the admin page names them from the auth side) */
  topUsers: z.array(z.object({ userId: z.string(), name: z.string().nullable().optional(), coins: z.number().int(), level: z.number().int(), tasksCompleted: z.number().int() })).optional(),
  /** how many users unlocked each achievement, in definition order */
  achievements: z.array(z.object({ key: z.string(), title: z.string(), users: z.number().int() })).optional(),
});
export type TasksAdminStats = z.infer<typeof tasksAdminStats>;
export const tasksAdminStatsRpc = defineRpc('tasks.admin.stats', z.object({}).strict(), tasksAdminStats);

export const adminStats = z.object({
  generatedAt: z.string(),
  users: z.object({
    total: z.number().int(),
    new7d: z.number().int(),
    new30d: z.number().int(),
    active7d: z.number().int(),
    active30d: z.number().int(),
    byProvider: z.array(z.object({ provider: z.string(), users: z.number().int() })),
    withSecondFactor: z.number().int(),
  }),
  /** null when the tasks service did not answer */
  tasks: tasksAdminStats.nullable(),
  /** the scheduler's last run per job; null when it did not answer */
  cron: cronJobsStatus.nullable(),
  update: z.unknown().nullable(),
});
export type AdminStats = z.infer<typeof adminStats>;

/** The auth service's part: user counts, and the names of the users the tasks service ranked (ids only there). */
export const authAdminUsersRpc = defineRpc(
  'auth.admin.users',
  z.object({ names: z.array(z.uuid()).max(100) }).strict(),
  z.object({ users: adminStats.shape.users, names: z.array(z.object({ userId: z.string(), name: z.string().nullable() })) }),
);

export const adminApi = {
  stats: defineRoute({
    method: 'GET',
    path: '/api/admin/stats',
    auth: 'admin',
    subject: 'gateway.http.admin.stats',
    response: adminStats,
    summary: 'Aggregate statistics (ADMIN_USER_IDS only)',
    tag: 'admin',
  }),
  metrics: defineRoute({
    method: 'GET',
    path: '/api/admin/metrics',
    auth: 'admin',
    subject: 'gateway.http.admin.metrics',
    response: adminMetrics,
    summary: "Key figures (requests, outbox backlog, webhook deliveries, cron runs) from the running processes' metrics registries (ADMIN_USER_IDS only)",
    tag: 'admin',
  }),
  deadLetters: defineRoute({
    method: 'GET',
    path: '/api/admin/dead-letters',
    auth: 'admin',
    subject: 'gateway.http.admin.dead-letters',
    response: z.object({
      generatedAt: z.string(),
      /** each service's parked events (none is the healthy answer) */
      services: z.array(deadLettersReply),
      /** services that did not answer (down, or of a release without parking) */
      missing: z.array(z.string()),
    }),
    summary: 'Events parked because a consumer could not read them, per service (ADMIN_USER_IDS only)',
    tag: 'admin',
  }),
  replayDeadLetters: defineRoute({
    method: 'POST',
    path: '/api/admin/dead-letters/replay',
    auth: 'admin',
    subject: 'gateway.http.admin.dead-letters.replay',
    body: z
      .object({
        /** one service's parked events; all services when left out */
        service: z.enum(SERVICE_NAMES).optional(),
        /** only these parked events (of `service`) */
        ids: z.array(z.uuid()).min(1).max(500).optional(),
      })
      .strict()
      .refine((b) => !b.ids || b.service, { message: 'name the service whose events these are', path: ['service'] }),
    response: z.object({ results: z.array(replayReply), missing: z.array(z.string()) }),
    status: 200,
    summary: 'Hand parked events to their consumers again, e.g. after upgrading them (ADMIN_USER_IDS only)',
    tag: 'admin',
  }),
};

/** HTTP routes the gateway answers itself (over the bus, like any service's). */
export const adminRoutes: AnyRoute[] = Object.values(adminApi);

export type AdminDeadLetters = z.infer<typeof adminApi.deadLetters.response>;
export type AdminReplay = z.infer<typeof adminApi.replayDeadLetters.response>;
