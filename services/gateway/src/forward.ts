import { createHash, randomUUID } from 'node:crypto';
import { AppError, issuesFromZod, UPLOAD_CHUNK_BYTES, type AnyRoute, type Identity, type RawResponse, type UploadRef, type UploadSpec } from '@tasksvc/proto';
import type { Bus, Config, Logger, Pool } from '@tasksvc/runtime';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { authorize, resolveIdentity } from './identity.ts';
import { idempotencyKeyOf, withIdempotency, type Answer } from './idempotency.ts';
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
/** Pieces of one upload on their way to the service at once. */
const UPLOAD_PARALLELISM = 4;

/**
 * Hand an upload's bytes to the owning service piece by piece (a bus message has a size limit) and
 * return what the route's own call carries as its body.
 */
async function sendUpload(bus: Bus, spec: UploadSpec, user: Identity, file: Buffer, contentType: string | undefined, requestId: string): Promise<UploadRef> {
  if (file.length === 0) throw new AppError('VALIDATION_FAILED', 'invalid body', [{ path: 'body', message: 'the file is empty: send its bytes as the request body' }]);
  const id = randomUUID();
  const chunks = Math.ceil(file.length / UPLOAD_CHUNK_BYTES);
  let next = 0;
  const worker = async () => {
    for (let seq = next++; seq < chunks; seq = next++) {
      const data = file.subarray(seq * UPLOAD_CHUNK_BYTES, (seq + 1) * UPLOAD_CHUNK_BYTES).toString('base64');
      await bus.request(spec.chunk, { user, uploadId: id, seq, data }, { requestId, timeoutMs: 30_000 });
    }
  };
  await Promise.all(Array.from({ length: Math.min(UPLOAD_PARALLELISM, chunks) }, worker));
  return { id, bytes: file.length, chunks, sha256: createHash('sha256').update(file).digest('hex'), contentType: contentType?.slice(0, 200) ?? null };
}

export function registerForwardedRoutes(app: FastifyInstance, routes: AnyRoute[], deps: { bus: Bus; config: Config; pool: Pool; log: Logger }): void {
  const uploads = routes.filter((r) => r.upload);
  if (uploads.length > 0) {
    void app.register(async (scope) => {
      // Inside this scope only: the body is the file's bytes, whatever its type, up to the route's own limit.
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
      registerRoutes(scope, uploads, deps);
    });
  }
  registerRoutes(app, routes.filter((r) => !r.upload), deps);
}

function registerRoutes(app: FastifyInstance, routes: AnyRoute[], deps: { bus: Bus; config: Config; pool: Pool; log: Logger }): void {
  for (const route of routes) {
    app.route({
      ...(route.upload ? { bodyLimit: route.upload.maxBytes } : {}),
      method: route.method,
      url: route.path,
      handler: async (req: FastifyRequest, reply: FastifyReply) => {
        const user = route.auth === 'none' && !req.headers.cookie && !req.headers.authorization ? null : await resolveIdentity(req, deps.bus, deps.config, { fresh: route.rpc.subject.startsWith('auth.') }).catch((err: unknown) => {
          if (route.auth === 'none') return null;
          throw err;
        });
        authorize(route.auth, route.method, user);
        const key = idempotencyKeyOf(req, route, user);
        const run = async (): Promise<Answer> => {
          const params = parsePart(route, 'params', req.params ?? {});
          const query = parsePart(route, 'query', req.query ?? {});
          let body: unknown;
          if (route.upload) {
            // counted before the file goes out; an upload's body is the file: it goes to the service in
            // pieces first (user is set: upload routes are never public)
            await enforceRateLimit(route, user, undefined, deps, reply, params as Record<string, unknown>);
            body = await sendUpload(deps.bus, route.upload, user!, Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0), req.headers['content-type'], String(req.id));
          } else {
            body = parsePart(route, 'body', req.body ?? (route.method === 'GET' || route.method === 'DELETE' ? undefined : {}));
            // after validation: a bulk action counts each of its tasks, and an invalid call (it changes nothing) counts nothing
            await enforceRateLimit(route, user, body, deps, reply, params as Record<string, unknown>);
          }
          const call = { user, params, query, body, ip: req.ip, userAgent: req.headers['user-agent'] };
          // every part is the route's own parse, and the user the auth service's checked answer
          const ro = { requestId: String(req.id), timeoutMs: 30_000, checked: true };
          if (route.kind === 'raw') {
            const raw = (await deps.bus.request(route.rpc, call, ro)) as RawResponse;
            return { status: raw.status, contentType: raw.contentType, headers: raw.headers, body: raw.body };
          }
          if (route.status === 204) {
            await deps.bus.request(route.rpc, call, ro);
            return { status: 204, contentType: null, headers: null, body: null };
          }
          // the owning service has checked its reply against the route's schema: its JSON is the answer
          // (parsing, checking and writing it out again here was a third of the gateway's CPU for a list)
          return { status: route.status, contentType: JSON_TYPE, headers: null, body: await deps.bus.requestJson(route.rpc, call, ro) };
        };
        if (key && user) return withIdempotency(deps, req, reply, user.id, key, run);
        const a = await run();
        void reply.code(a.status);
        if (a.headers) void reply.headers(a.headers);
        if (a.contentType) void reply.type(a.contentType);
        return a.body === null ? reply.send() : reply.send(a.body);
      },
    });
  }
}
