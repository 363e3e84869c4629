import type { HttpFigures } from '@tasksvc/proto';
import { countSamples, histogram, RecentWindow, sum, type Sample } from '@tasksvc/runtime';
import type { FastifyReply, FastifyRequest } from 'fastify';

const requests = histogram('tasksvc_http_request_duration_seconds', 'HTTP requests answered by the gateway, by route template, method and status.', ['route', 'method', 'status']);

/**
 * The route label: the template a request matched (`/api/tasks/:id`), never its URL. Files of the
 * built UI count as `static` (each is a route of its own); anything that matched no route (404s and
 * the single-page app's fallback) as `unmatched`.
 */
export function routeLabel(req: Pick<FastifyRequest, 'routeOptions'>): string {
  const route = req.routeOptions;
  if (route.url === undefined || route.url === '') return 'unmatched';
  if ((route.config as { file?: unknown } | undefined)?.file !== undefined) return 'static';
  return route.url;
}

/** Called once per answered request (request-log.ts), so metrics add no hook of their own. */
export function recordRequest(req: FastifyRequest, reply: FastifyReply): void {
  requests.observe({ route: routeLabel(req), method: req.method, status: reply.statusCode }, reply.elapsedTime / 1000);
}

/** The admin page's request rate: counts over the last 5 minutes, from snapshots taken every 10 s. */
const WINDOW_MS = 5 * 60_000;
const SNAPSHOT_MS = 10_000;
type StatusClass = 'requests' | 'clientErrors' | 'serverErrors';

async function statusCounts(): Promise<Record<StatusClass, number>> {
  const samples = await countSamples(requests);
  const status = (l: Sample['labels']) => Number(l.status);
  return {
    requests: sum(samples),
    clientErrors: sum(samples, (l) => status(l) >= 400 && status(l) < 500),
    serverErrors: sum(samples, (l) => status(l) >= 500),
  };
}

/** Started with the gateway: snapshots for the recent window, and the figures it serves for the admin page. */
export function startHttpFigures(): { figures(): Promise<HttpFigures>; stop(): void } {
  const window = new RecentWindow<StatusClass>(WINDOW_MS);
  const snapshot = async () => window.add(Date.now(), await statusCounts());
  void snapshot();
  const timer = setInterval(() => void snapshot(), SNAPSHOT_MS);
  timer.unref();
  return {
    async figures() {
      const now = await statusCounts();
      const recent = window.over(Date.now(), now);
      return { ...now, recent: { seconds: Math.round(recent.seconds), ...recent.counts } };
    },
    stop: () => clearInterval(timer),
  };
}
