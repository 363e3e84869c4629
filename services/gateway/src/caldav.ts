import { Readable } from 'node:stream';
import { DAV_BODY_LIMIT, DAV_HEADERS, DAV_METHODS, DAV_READ_METHODS, DAV_ROOT, DAV_WRITES_PER_MINUTE, davRpc, WELL_KNOWN_CALDAV, type DavRequest, type Identity } from '@tasksvc/proto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { GatewayDeps } from './deps.ts';
import { resolveIdentity } from './identity.ts';
import { enforceLimit } from './rate-limit.ts';

/** WebDAV methods Node parses but Fastify does not route by default. */
const EXTRA_METHODS = ['PROPFIND', 'PROPPATCH', 'REPORT', 'MKCALENDAR', 'MKCOL', 'MOVE'];
/** WebDAV methods the server does not offer (docs/caldav.md): 405 with the ones it does, not a 404 that says the resource is missing. */
const REFUSED_METHODS = ['COPY', 'LOCK', 'UNLOCK'];

const CHALLENGE = 'Basic realm="Task Service CalDAV", charset="UTF-8"';

/** `Authorization: Basic` → user name and password; `Bearer` → the key alone. */
export function appPassword(authorization: string | undefined): { user: string | null; key: string } | null {
  if (!authorization) return null;
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  if (bearer) return { user: null, key: bearer[1]! };
  const basic = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(authorization);
  if (!basic) return null;
  const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  return { user: decoded.slice(0, colon), key: decoded.slice(colon + 1) };
}

/** The user name a client gives must be the account's e-mail (or its id): a key alone does not say whose calendars a client meant. */
const sameUser = (given: string | null, user: Identity) => given === null || given.toLowerCase() === user.email.toLowerCase() || given.toLowerCase() === user.id.toLowerCase();

/**
 * CalDAV at `/dav` (and the `/.well-known/caldav` redirect, RFC 6764). Thin on purpose: the gateway
 * authenticates the app password (HTTP Basic: e-mail + API key; never a session cookie), counts
 * writes against the rate limit, and forwards method, path, the DAV headers and the body over the
 * bus to the tasks service, which does the DAV work (handlers/caldav.ts) and may answer in pages.
 */
export async function registerCaldav(app: FastifyInstance, deps: GatewayDeps): Promise<void> {
  for (const m of [...EXTRA_METHODS, ...REFUSED_METHODS]) if (!app.supportedMethods.includes(m)) app.addHttpMethod(m, { hasBody: true });
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'string', bodyLimit: DAV_BODY_LIMIT }, (_req, body, done) => done(null, body));

    // RFC 6764 §5: the well-known URI redirects to the context path, for every method a client tries
    const redirect = (_req: FastifyRequest, reply: FastifyReply) => reply.code(301).header('location', `${DAV_ROOT}/`).send();
    scope.route({ method: [...DAV_METHODS, 'POST'], url: WELL_KNOWN_CALDAV, exposeHeadRoute: false, handler: redirect });

    const handler = async (req: FastifyRequest, reply: FastifyReply) => {
      const method = req.method as DavRequest['method'];
      if (!(DAV_METHODS as readonly string[]).includes(method)) return reply.code(405).header('allow', DAV_METHODS.join(', ')).send();
      const given = appPassword(req.headers.authorization);
      const user = given ? await resolveIdentity(req, deps.bus, deps.config, { bearer: given.key }) : null;
      if (!user || !given || !sameUser(given.user, user)) {
        return reply.code(401).header('www-authenticate', CHALLENGE).type('text/plain; charset=utf-8').send('Sign in with your e-mail address and an app password (Settings → Connect an app).\n');
      }
      if (!DAV_READ_METHODS.includes(method)) await enforceLimit('caldav.write', DAV_WRITES_PER_MINUTE, 'CalDAV writes', user, deps, reply);
      const headers: Record<string, string> = {};
      for (const name of DAV_HEADERS) {
        const v = req.headers[name];
        if (v !== undefined) headers[name] = Array.isArray(v) ? v.join(', ') : v;
      }
      const call: DavRequest = { user, method, path: req.url.split('?')[0]!, headers, ...(typeof req.body === 'string' && req.body ? { body: req.body } : {}) };
      const ro = { requestId: String(req.id), timeoutMs: 30_000 };
      const first = await deps.bus.request(davRpc, call, ro);
      void reply.code(first.status).headers({ 'cache-control': 'no-store', ...first.headers });
      if (!first.next) return reply.send(first.body);
      // a long multistatus: the next pages are asked for while the first is written
      async function* pages() {
        yield first.body;
        for (let next: string | undefined = first.next; next; ) {
          const page = await deps.bus.request(davRpc, { ...call, cursor: next }, ro);
          yield page.body;
          next = page.next;
        }
      }
      return reply.send(Readable.from(pages()));
    };
    scope.route({ method: [...DAV_METHODS, ...REFUSED_METHODS], url: DAV_ROOT, exposeHeadRoute: false, handler });
    scope.route({ method: [...DAV_METHODS, ...REFUSED_METHODS], url: `${DAV_ROOT}/*`, exposeHeadRoute: false, handler });
  });
}
