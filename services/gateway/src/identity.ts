import { AppError, resolveIdentityRpc, SESSION_COOKIE_RE, type Identity, type RouteAuth } from '@tasksvc/proto';
import type { Bus, Config } from '@tasksvc/runtime';
import type { FastifyRequest } from 'fastify';
import { hash } from 'node:crypto';
import { identityCache } from './identity-cache.ts';
import { noteSessionRename } from './session-rename.ts';

/**
 * Who is calling: asks the auth service (session cookie or API key). Null when anonymous. `fresh`:
 * never from the cache (the auth service's own account routes always see the credential as it is now).
 * `bearer`: this API key instead of the request's credentials, cookie ignored (CalDAV's app password).
 */
export async function resolveIdentity(req: FastifyRequest, bus: Bus, config: Config, opts: { fresh?: boolean; bearer?: string } = {}): Promise<Identity | null> {
  const authorization = opts.bearer !== undefined ? `Bearer ${opts.bearer}` : req.headers.authorization;
  // Only the session cookie identifies anyone: other cookies (CSRF, callback URL…) need no round trip.
  const cookie = opts.bearer === undefined && req.headers.cookie && SESSION_COOKIE_RE.test(req.headers.cookie) ? req.headers.cookie : undefined;
  if (!cookie && !authorization) return null;
  // An API key alone is answered from the cache (the cookie, when there is one, is ignored then too).
  const cache = authorization?.startsWith('Bearer ') && !opts.fresh ? identityCache(bus) : undefined;
  const key = cache && hash('sha256', authorization!, 'base64');
  const cached = key ? cache.get(key) : undefined;
  const stamp = cache?.stamp() ?? 0;
  const ask = () => bus.request(resolveIdentityRpc, { cookie, authorization }, { requestId: String(req.id), timeoutMs: 5_000 });
  if (cached?.refresh && cache && key) {
    // answered from the entry; a failed refresh leaves it to expire, and the key's next request then asks
    ask().then(
      (fresh) => (fresh ? cache.set(key, fresh, stamp) : cache.forget(key)),
      (err: Error) => req.log.debug({ err: err.message }, 'identity refresh failed'),
    );
  }
  const user = cached?.user ?? (await ask());
  if (!cached) noteSessionRename(req, config, user);
  if (!user) return null;
  if (key && !cached) cache.set(key, user, stamp);
  return { ...user, isAdmin: config.ADMIN_USER_IDS.includes(user.id.toLowerCase()) };
}

/** Apply a route's access rule; throws the matching AppError. */
export function authorize(auth: RouteAuth, method: string, user: Identity | null): void {
  if (auth === 'none') return;
  if (!user) throw new AppError('UNAUTHENTICATED', 'sign in first');
  if (user.readOnly && method !== 'GET' && method !== 'HEAD') throw new AppError('READ_ONLY_KEY', 'this API key is read-only');
  if (auth === 'setup') return;
  if (!user.secondFactorOk) throw new AppError('SECOND_FACTOR_REQUIRED', 'set up a second factor at /setup/2fa first');
  if (auth === 'admin' && !user.isAdmin) throw new AppError('ADMIN_ONLY', 'administrators only');
}
