import { histogram } from '@tasksvc/runtime';
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
