import { AppError, issuesFromZod, type AnyRoute, type RawResponse } from '@tasksvc/proto';
import type { Bus, Config, Logger, Pool } from '@tasksvc/runtime';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { authorize, resolveIdentity } from './identity.ts';
import { enforceRateLimit } from './rate-limit.ts';

/** What fastify sends a JSON reply as. */
const JSON_TYPE = 'application/json; charset=utf-8';

/** Deeper input than any route needs; refusing it keeps recursive code downstream safe. */
const MAX_DEPTH = 32;

/**
 * Refuse what no schema should have to think about: strings holding NUL (PostgreSQL cannot store
 * them in text) or a lone UTF-16 surrogate (JSON may escape one, PostgreSQL's json refuses it: the
 * event of the write could not be stored), and absurdly deep nesting. Returns the offending path and why.
 */
function inspectInput(value: unknown, path: string, depth = 0): { path: string; message: string } | undefined {
  if (typeof value === 'string') {
    if (value.includes('\u0000')) return { path, message: 'must not contain NUL characters' };
    return value.isWellFormed() ? undefined : { path, message: 'must be well-formed Unicode (it holds a lone surrogate, \\ud800–\\udfff)' };
  }
  if (!value || typeof value !== 'object') return undefined;
  if (depth >= MAX_DEPTH) return { path, message: `is nested deeper than ${MAX_DEPTH} levels` };
  for (const [k, v] of Object.entries(value)) {
    const hit = inspectInput(k, `${path}.${k}`, depth + 1) ?? inspectInput(v, `${path}.${k}`, depth + 1);
    if (hit) return hit;
  }
  return undefined;
}

function parsePart<T>(route: AnyRoute, part: 'params' | 'query' | 'body', value: unknown): T {
  const refused = inspectInput(value, part);
  if (refused) throw new AppError('VALIDATION_FAILED', `invalid ${part}`, [refused]);
  const r = route[part].safeParse(value);
  if (!r.success) throw new AppError('VALIDATION_FAILED', `invalid ${part}`, issuesFromZod(r.error.issues, part));
  return r.data as T;
}

/**
 * Register every declared route: validate input with the route's schemas (400 naming each field),
 * authenticate and authorise, then forward the typed call to the owning service over the bus.
 */
export function registerForwardedRoutes(app: FastifyInstance, routes: AnyRoute[], deps: { bus: Bus; config: Config; pool: Pool; log: Logger }): void {
  for (const route of routes) {
    app.route({
      method: route.method,
      url: route.path,
      handler: async (req: FastifyRequest, reply: FastifyReply) => {
        const user = route.auth === 'none' && !req.headers.cookie && !req.headers.authorization ? null : await resolveIdentity(req, deps.bus, deps.config, { fresh: route.rpc.subject.startsWith('auth.') }).catch((err: unknown) => {
          if (route.auth === 'none') return null;
          throw err;
        });
        authorize(route.auth, route.method, user);
        await enforceRateLimit(route, user, deps, reply);
        const call = {
          user,
          params: parsePart(route, 'params', req.params ?? {}),
          query: parsePart(route, 'query', req.query ?? {}),
          body: parsePart(route, 'body', req.body ?? (route.method === 'GET' || route.method === 'DELETE' ? undefined : {})),
          ip: req.ip,
          userAgent: req.headers['user-agent'],
        };
        // every part is the route's own parse, and the user the auth service's checked answer
        const ro = { requestId: String(req.id), timeoutMs: 30_000, checked: true };
        if (route.kind === 'raw') {
          const raw = (await deps.bus.request(route.rpc, call, ro)) as RawResponse;
          return reply.code(raw.status).headers(raw.headers).type(raw.contentType).send(raw.body);
        }
        if (route.status === 204) {
          await deps.bus.request(route.rpc, call, ro);
          return reply.code(204).send();
        }
        // the owning service has checked its reply against the route's schema: its JSON is the answer
        // (parsing, checking and writing it out again here was a third of the gateway's CPU for a list)
        return reply.code(route.status).type(JSON_TYPE).send(await deps.bus.requestJson(route.rpc, call, ro));
      },
    });
  }
}
