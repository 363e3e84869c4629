import { authjsRpc } from '@tasksvc/proto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { GatewayDeps } from './deps.ts';
import { resolveIdentity } from './identity.ts';
import { carriesLegacySession } from './session-rename.ts';

/** Headers that describe one hop, not the message: never copied across the proxy. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'content-length', 'proxy-connection', 'te', 'trailer']);

const AUTH_BODY_LIMIT = 64 * 1024;

/**
 * `/api/auth/*` → Auth.js in the auth service. Method, path and query, the request headers (cookie,
 * host, x-forwarded-*…) and the raw form or JSON body go over the bus; status, every header (each
 * Set-Cookie separately) and the body come back. The declared JSON routes under /api/auth (2FA,
 * passkeys, sessions) are static paths and win over this wildcard.
 */
export async function registerAuthProxy(app: FastifyInstance, deps: GatewayDeps): Promise<void> {
  await app.register(async (scope) => {
    // Inside this scope only: keep the body exactly as sent, whatever its type.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'string', bodyLimit: AUTH_BODY_LIMIT }, (_req, body, done) => done(null, body));

    const handler = async (req: FastifyRequest, reply: FastifyReply) => {
      // a session under the cookie's old name: its identity (the expiry) lets the answer rename it
      if (carriesLegacySession(req, deps.config)) await resolveIdentity(req, deps.bus, deps.config, { fresh: true }).catch(() => null);
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) {
        if (value === undefined || HOP_BY_HOP.has(name)) continue;
        headers[name] = Array.isArray(value) ? value.join(', ') : value;
      }
      const result = await deps.bus.request(
        authjsRpc,
        { method: req.method, path: req.url, headers, ...(typeof req.body === 'string' ? { body: req.body } : {}), ip: req.ip },
        { requestId: String(req.id), timeoutMs: 30_000 },
      );
      const cookies: string[] = [];
      for (const [name, value] of result.headers) {
        const lower = name.toLowerCase();
        if (lower === 'set-cookie') cookies.push(value);
        else if (!HOP_BY_HOP.has(lower)) void reply.header(name, value);
      }
      if (cookies.length) void reply.header('set-cookie', cookies);
      if (!reply.hasHeader('cache-control')) void reply.header('cache-control', 'no-store');
      return reply.code(result.status).send(result.body);
    };
    scope.route({ method: ['GET', 'POST'], url: '/api/auth/*', handler });
  });
}
