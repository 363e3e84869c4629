import { metricsSummaryRpc, SERVICE_NAMES, type AdminMetrics, type HttpCall, type MetricsSummary } from '@tasksvc/proto';
import { requireAdmin, type AuthDeps } from './context.ts';

/** How long the page waits for a service; one that does not answer is listed as missing, not waited for. */
const ASK_MS = 3_000;

/**
 * Merge the services' answers: each figure from the service that owns it (requests from the gateway,
 * deliveries from the webhook service, cron from the scheduler, each outbox from its relay's service),
 * named by the process that answered. Under `npm start` every answer names the same process.
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

/** GET /api/admin/metrics: every service is asked for its figures; each answers from its own process's registry. */
export function adminMetricsHandler(deps: AuthDeps) {
  return async (call: HttpCall<unknown, unknown, unknown>): Promise<AdminMetrics> => {
    requireAdmin(call.user);
    const replies = await Promise.all(
      SERVICE_NAMES.map((name) =>
        deps.bus.request(metricsSummaryRpc(name), {}, { timeoutMs: ASK_MS }).catch((err: unknown) => {
          deps.log.warn({ err, service: name }, 'admin figures: no answer');
          return { missing: name };
        }),
      ),
    );
    return mergeFigures(replies);
  };
}
