import {
  adminApi,
  AppError,
  authAdminUsersRpc,
  cronJobsRpc,
  deadLettersRpc,
  metricsSummaryRpc,
  replayDeadLettersRpc,
  SERVICE_NAMES,
  tasksAdminStatsRpc,
  updateStatusRpc,
  type AdminMetrics,
  type AdminStats,
  type HttpCall,
  type MetricsSummary,
  type Rpc,
  type ServiceName,
} from '@tasksvc/proto';
import type { Bus, Logger, Subscription } from '@tasksvc/runtime';

/** How long the page waits for a service; one that does not answer is left out (its part null, or listed as missing). */
const ASK_MS = 3_000;

/** The routes check the admin gate before forwarding; a bus caller that skipped it gets the same answer. */
function requireAdmin(call: HttpCall<unknown, unknown, unknown>): void {
  if (!call.user) throw new AppError('UNAUTHENTICATED', 'sign in first');
  if (!call.user.isAdmin) throw new AppError('ADMIN_ONLY', 'administrators only');
}

/**
 * Merge the services' metric answers: each figure from the service that owns it (requests from the
 * gateway, deliveries from the webhook service, cron from the scheduler, each outbox from its relay's
 * service), named by the process that answered. Under `npm start` every answer names the same process.
 */
export function mergeFigures(replies: (MetricsSummary | { missing: string })[], now = new Date()): AdminMetrics {
  const answered = replies.filter((r): r is MetricsSummary => !('missing' in r));
  const processes = new Map<string, AdminMetrics['processes'][number]>();
  for (const r of answered) {
    const p = processes.get(r.instance) ?? { instance: r.instance, startedAt: r.startedAt, services: [] };
    p.services.push(r.service);
    processes.set(r.instance, p);
  }
  const owner = (has: (r: MetricsSummary) => unknown) => answered.find(has);
  const http = owner((r) => r.http);
  const webhooks = owner((r) => r.webhooks);
  const cron = owner((r) => r.cron);
  return {
    generatedAt: now.toISOString(),
    processes: [...processes.values()],
    missing: replies.flatMap((r) => ('missing' in r ? [r.missing] : [])),
    http: http?.http ? { ...http.http, instance: http.instance } : null,
    outbox: answered.flatMap((r) => (r.outbox ?? []).map((o) => ({ ...o, instance: r.instance }))).sort((a, b) => a.schema.localeCompare(b.schema)),
    webhooks: webhooks?.webhooks ? { ...webhooks.webhooks, instance: webhooks.instance } : null,
    cron: cron?.cron ? { ...cron.cron, instance: cron.instance } : null,
  };
}

/**
 * The admin page's two routes, answered by the gateway (it serves the page): each service is asked
 * for its own part, and a part that does not come is null (statistics) or named as missing (figures).
 */
export function serveAdmin(bus: Bus, log: Logger): Subscription[] {
  const ask = <Req, Res>(rpc: Rpc<Req, Res>, payload: Req, what: string): Promise<Res | null> =>
    bus.request(rpc, payload, { timeoutMs: ASK_MS }).catch((err: unknown) => {
      log.warn({ err, subject: rpc.subject }, `admin ${what}: no answer`);
      return null;
    });

  const stats = async (call: HttpCall<unknown, unknown, unknown>): Promise<AdminStats> => {
    requireAdmin(call);
    const [tasks, cron, update] = await Promise.all([ask(tasksAdminStatsRpc, {}, 'statistics'), ask(cronJobsRpc, {}, 'statistics'), ask(updateStatusRpc, {}, 'statistics')]);
    // The tasks service ranks users by id; their names and the user counts are the auth service's.
    const auth = await bus.request(authAdminUsersRpc, { names: (tasks?.topUsers ?? []).map((t) => t.userId) }, { timeoutMs: ASK_MS });
    if (tasks?.topUsers?.length) {
      const names = new Map(auth.names.map((n) => [n.userId, n.name]));
      tasks.topUsers = tasks.topUsers.map((t) => ({ ...t, name: names.get(t.userId) ?? null }));
    }
    return { generatedAt: new Date().toISOString(), users: auth.users, tasks, cron, update };
  };

  const metrics = async (call: HttpCall<unknown, unknown, unknown>): Promise<AdminMetrics> => {
    requireAdmin(call);
    const replies = await Promise.all(SERVICE_NAMES.map(async (name) => (await ask(metricsSummaryRpc(name), {}, 'figures')) ?? { missing: name }));
    return mergeFigures(replies);
  };

  /** Ask each named service for its own part; the answers, and the services that gave none in time. */
  const askEach = async <Req, Res>(names: readonly ServiceName[], rpcOf: (name: ServiceName) => Rpc<Req, Res>, payload: Req, what: string, timeoutMs = ASK_MS) => {
    const replies = await Promise.all(
      names.map((name) =>
        bus.request(rpcOf(name), payload, { timeoutMs }).then(
          (answer) => ({ answer }),
          (err: unknown) => {
            log.warn({ err, service: name }, `admin ${what}: no answer`);
            return { missing: name };
          },
        ),
      ),
    );
    return { answers: replies.flatMap((r) => ('answer' in r ? [r.answer] : [])), missing: replies.flatMap((r) => ('missing' in r ? [r.missing] : [])) };
  };

  // Parked events live with the service that consumes them; each is asked for its own.
  const deadLetters = async (call: HttpCall<unknown, unknown, unknown>) => {
    requireAdmin(call);
    const { answers, missing } = await askEach(SERVICE_NAMES, deadLettersRpc, {}, 'dead letters');
    return { generatedAt: new Date().toISOString(), services: answers, missing };
  };
  const replay = async (call: HttpCall<unknown, unknown, { service?: ServiceName | undefined; ids?: string[] | undefined }>) => {
    requireAdmin(call);
    // a replay runs the consumer over every parked event: more time than a look-up
    const { answers, missing } = await askEach(call.body.service ? [call.body.service] : SERVICE_NAMES, replayDeadLettersRpc, { ids: call.body.ids }, 'replay', 25_000);
    return { results: answers, missing };
  };

  return [bus.serve(adminApi.stats.rpc, stats), bus.serve(adminApi.metrics.rpc, metrics), bus.serve(adminApi.deadLetters.rpc, deadLetters), bus.serve(adminApi.replayDeadLetters.rpc, replay)];
}
