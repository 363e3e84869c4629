import { HOST_SESSION_COOKIE, legacySessionToken, renamedSessionCookies, secureSessionCookies, type Identity } from '@tasksvc/proto';
import type { Config } from '@tasksvc/runtime';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/**
 * The session cookie's rename from `__Secure-` to `__Host-` (issue 56 #13, proto session-cookie.ts):
 * a request signed in under the old name gets, in its answer, the same session under the new name
 * (its expiry from the auth service's answer) and the old name cleared. Nobody is signed out, and
 * the old name is sent at most until the browser's next request.
 */
const renames = new WeakMap<FastifyRequest, string[]>();

/** After an identity look-up: remember the rename when the session came under the old name. */
export function noteSessionRename(req: FastifyRequest, config: Pick<Config, 'AUTH_CALLBACK_URL'>, user: Identity | null): void {
  // an auth service of the previous release gives a session no expiry: the rename waits for the upgraded one
  if (user?.method !== 'session' || !user.expiresAt) return;
  const token = legacySessionToken(req.headers.cookie, secureSessionCookies(config.AUTH_CALLBACK_URL));
  if (token) renames.set(req, renamedSessionCookies(token, new Date(user.expiresAt)));
}

/** Whether this request is signed in under the old name (an Auth.js route then asks for its identity first). */
export function carriesLegacySession(req: FastifyRequest, config: Pick<Config, 'AUTH_CALLBACK_URL'>): boolean {
  return legacySessionToken(req.headers.cookie, secureSessionCookies(config.AUTH_CALLBACK_URL)) !== null;
}

export function registerSessionRename(app: FastifyInstance): void {
  app.addHook('onSend', (req, reply, payload, done) => {
    const cookies = renames.get(req);
    if (cookies) {
      const sent = reply.getHeader('set-cookie');
      // an answer that sets or clears the session itself (sign-in, sign-out, Auth.js's refresh) keeps
      // its own; the old name goes in any case
      const own = (Array.isArray(sent) ? sent : sent === undefined ? [] : [sent]).some((c) => String(c).startsWith(`${HOST_SESSION_COOKIE}=`));
      void reply.header('set-cookie', own ? cookies.slice(1) : cookies);
    }
    done(null, payload);
  });
}
