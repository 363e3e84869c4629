import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { AppError, routes as allRoutes } from '@tasksvc/proto';
import { activeTraceIds, databaseUnavailable, nameRequestSpan, traceRequests, tracingOn } from '@tasksvc/runtime';
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance } from 'fastify';
import { trustedHops } from './client-address.ts';
import type { GatewayDeps } from './deps.ts';
import { registerForwardedRoutes } from './forward.ts';
import { extensions } from './extensions.ts';
import { registerHealth } from './health.ts';
import { registerSameOrigin } from './same-origin.ts';
import { registerSecurityHeaders } from './security-headers.ts';
import { registerSessionRename } from './session-rename.ts';
import { routeLabel } from './http-metrics.ts';
import { quietRequest, RequestLogController } from './request-log.ts';
import { registerStaticAssets } from './static-assets.ts';

/** Machine endpoints called by probes and schedulers by IP or service name, not by public host. */
const HOST_CHECK_EXEMPT = new Set(['/api/health', '/api/cron', '/livez', '/readyz']);

const BODY_LIMIT = 1024 * 1024;

export const DEFAULT_UI_DIR = new URL('../../../ui/dist', import.meta.url).pathname;

/**
 * A request id from the client is echoed in the answer and every log line of the request, so it is
 * taken only from our own proxy (TRUST_PROXY_HOPS > 0, which lets it correlate its logs with ours) and
 * only in a strict format; anything else gets a fresh id (#56.12).
 */
export function acceptedRequestId(given: string | string[] | undefined, fromTrustedProxy: boolean): string | undefined {
  return fromTrustedProxy && typeof given === 'string' && /^[A-Za-z0-9._-]{1,64}$/.test(given) ? given : undefined;
}

function isLoopbackHost(host: string): boolean {
  const name = host.replace(/:\d+$/, '').replace(/^\[|\]$/g, '');
  return name === 'localhost' || name === '::1' || /^127\.\d+\.\d+\.\d+$/.test(name);
}

/**
 * No route of the gateway declares a fastify schema (the routes' zod schemas validate, forward.ts), yet
 * fastify requires its Ajv and fast-json-stringify compilers when an instance is made: ~110 modules and
 * 1.5 MB of heap at start (issue 58, Memory). These stand in for them and refuse a schema at start.
 */
const NO_FASTIFY_SCHEMAS = {
  compilersFactory: {
    buildValidator: (): never => {
      throw new Error('the gateway validates requests with the routes\' zod schemas: a fastify route schema is not supported (app.ts NO_FASTIFY_SCHEMAS)');
    },
    buildSerializer: (): never => {
      throw new Error('the gateway sends replies as the routes\' zod schemas checked them: a fastify response schema is not supported (app.ts NO_FASTIFY_SCHEMAS)');
    },
  },
};

export async function buildGateway(deps: GatewayDeps): Promise<FastifyInstance> {
  const { config } = deps;
  const logger: FastifyBaseLogger = deps.log;
  const tracing = tracingOn();
  const app = Fastify({
    loggerInstance: logger,
    bodyLimit: BODY_LIMIT,
    trustProxy: trustedHops(config.TRUST_PROXY_HOPS),
    logController: new RequestLogController(),
    schemaController: NO_FASTIFY_SCHEMAS,
    genReqId: (req) => {
      // tracing on: the request id is the trace id, so every log line of the request names its trace
      const traced = tracing ? activeTraceIds() : undefined;
      if (traced) return traced.traceId;
      return acceptedRequestId(req.headers['x-request-id'], config.TRUST_PROXY_HOPS > 0) ?? randomUUID();
    },
  });

  if (tracing) {
    // Each request runs inside its SERVER span from the first byte on (runtime tracing.ts), so the
    // bus request, and the SQL and events it causes, join its trace. Fastify's own listener is
    // wrapped rather than replaced with a serverFactory, which would drop the server options Fastify sets.
    const [listener] = app.server.listeners('request') as Parameters<typeof traceRequests>[0][];
    app.server.removeListener('request', listener!);
    app.server.on('request', traceRequests(listener!, { skip: (req) => quietRequest({ method: req.method ?? '', url: req.url ?? '' }) }));
  }

  const allowedHosts = new Set([new URL(config.PUBLIC_APP_URL).host.toLowerCase(), new URL(config.AUTH_CALLBACK_URL).host.toLowerCase()]);
  // Local development without a proxy: when the public URL is this machine, any loopback name and
  // port is this machine too (localhost:3000, 127.0.0.1:3311, [::1]:3000).
  const loopbackConfigured = isLoopbackHost(new URL(config.PUBLIC_APP_URL).host);
  const trustedHost = (host: string) => allowedHosts.has(host) || (loopbackConfigured && isLoopbackHost(host));

  registerSecurityHeaders(app);
  app.addHook('onRequest', (req, reply, done) => {
    reply.header('x-request-id', req.id);
    if (tracing) nameRequestSpan(req.raw, req.method, routeLabel(req));
    if (!config.AUTH_TRUST_HOST && !HOST_CHECK_EXEMPT.has(req.url.split('?')[0]!)) {
      const host = String(req.headers.host ?? '').toLowerCase();
      if (!trustedHost(host)) return done(new AppError('UNTRUSTED_HOST', `untrusted host "${host}": set AUTH_TRUST_HOST=true behind a proxy, or use ${[...allowedHosts].join(' or ')}`));
    }
    done();
  });

  registerSameOrigin(app, deps);
  registerSessionRename(app);

  app.setErrorHandler((err: FastifyError | AppError, req, reply) => {
    if (err instanceof AppError) {
      if (err.status >= 500) req.log.warn({ code: err.code, msg: err.message }, 'request failed');
      // a limit in a service says when it lets the call through, as the gateway's own limits do
      if (err.retryAfterSeconds !== undefined) void reply.header('retry-after', String(err.retryAfterSeconds));
      return reply.code(err.status).send(err.toBody());
    }
    const status = (err).statusCode;
    if (status && status >= 400 && status < 500) {
      const code = status === 413 ? 'PAYLOAD_TOO_LARGE' : 'BAD_REQUEST';
      return reply.code(status).send({ code, message: err.message });
    }
    if (databaseUnavailable(err)) {
      req.log.warn({ err: err.message }, 'database unavailable');
      return reply.code(503).send({ code: 'DATABASE_UNAVAILABLE', message: 'the database is unavailable; try again shortly' });
    }
    req.log.error({ err }, 'unhandled error');
    return reply.code(500).send({ code: 'INTERNAL', message: 'internal error' });
  });

  app.setNotFoundHandler((req, reply) => {
    if (req.url.startsWith('/api/') || req.method !== 'GET' || !deps.uiDir || !existsSync(join(deps.uiDir, 'index.html'))) {
      return reply.code(404).send({ code: 'NOT_FOUND', message: `no route ${req.method} ${req.url.split('?')[0]}` });
    }
    // Single-page app: unknown page paths get the app shell, which routes on the client.
    return reply.header('cache-control', 'no-cache').sendFile('index.html');
  });

  registerHealth(app, deps);
  registerForwardedRoutes(app, deps.routes ?? allRoutes, deps);
  for (const extend of extensions) await extend(app, deps);

  if (deps.uiDir && existsSync(deps.uiDir)) {
    await registerStaticAssets(app, deps.uiDir);
  }
  return app;
}
