import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import { recordRequest } from './http-metrics.ts';

/** Probes and UI files are requested constantly and say nothing about what people do: debug only. */
export function quietRequest(req: Pick<FastifyRequest, 'method' | 'url'>): boolean {
  const path = req.url.split('?')[0]!;
  if (path === '/api/health' || path.startsWith('/api/health/')) return true;
  return (req.method === 'GET' || req.method === 'HEAD') && !path.startsWith('/api/');
}

/**
 * One log line per request, written when the response is sent, instead of Fastify's two ("incoming
 * request" and "request completed"). `req`/`res` go through the logger's serializers. The request's
 * metrics are recorded here too (http-metrics.ts): Fastify calls this once for every answered request.
 */
export class RequestLogController extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, req: FastifyRequest, reply: FastifyReply): void {
    recordRequest(req, reply);
    const line = { req, res: reply, responseTime: Math.round(reply.elapsedTime), ...(error ? { err: error } : {}) };
    if (error) reply.log.error(line, 'request errored');
    else if (quietRequest(req)) reply.log.debug(line, 'request completed');
    else reply.log.info(line, 'request completed');
  }
}
