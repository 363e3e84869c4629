import { IDENTITY_CHANGED_SUBJECT, sessionTokenFromCookie, type Identity } from '@tasksvc/proto';
import type { Bus } from '@tasksvc/runtime';
import { pendingSecondFactorPage, secondFactorOk, type FactorState } from '../domain/second-factor.ts';
import { apiKeyLookupHash, bearerToken, sessionTokenHash } from '../domain/tokens.ts';
import { apiKeyByHash, touchApiKey } from '../db/api-keys.ts';
import { factorSummary } from '../db/factors.ts';
import { sessionAndUser, touchSession, type SessionRow } from '../db/sessions.ts';
import { touchUser } from '../db/users.ts';
import { readableFactors, secureCookies, type AuthDeps } from './context.ts';

function background(deps: AuthDeps, p: Promise<unknown>): void {
  p.catch((err: unknown) => deps.log.warn({ err }, 'activity update failed'));
}

/**
 * Activity times are coarse (a minute for keys and sessions, five for users): the touch UPDATEs run
 * only when the rows read anyway say that much has passed, never as statements that match nothing.
 */
const activityDue = (last: Date | null, everyMs: number) => !last || Date.now() - last.getTime() >= everyMs;

/** The live session a Cookie header carries, with its user and factor state. */
async function sessionFromCookie(deps: AuthDeps, cookie: string | undefined): Promise<{ session: SessionRow; email: string; userLastActiveAt: Date | null; state: FactorState } | null> {
  const token = sessionTokenFromCookie(cookie, secureCookies(deps.config));
  if (!token || token.length > 512) return null;
  const found = await sessionAndUser(deps.pool, sessionTokenHash(deps.config.AUTH_SECRET, token));
  if (!found) return null;
  const summary = await factorSummary(deps.pool, found.session.userId);
  return {
    session: found.session,
    email: found.user.email ?? '',
    userLastActiveAt: found.userLastActiveAt,
    state: { required: deps.config.REQUIRE_2FA, ...readableFactors(deps.config, summary), sessionVerified: found.session.secondFactorVerifiedAt !== null },
  };
}

/**
 * `auth.identity.resolve`: an `Authorization: Bearer` API key wins over a cookie (an explicit but
 * unknown key is anonymous, never a fallback to the cookie); otherwise the session cookie. Other
 * Authorization schemes (e.g. a reverse proxy's Basic auth) are ignored.
 */
export async function resolveIdentity(deps: AuthDeps, req: { cookie?: string | undefined; authorization?: string | undefined }): Promise<Identity | null> {
  const bearer = bearerToken(req.authorization);
  // Only a Bearer credential is ours to judge; another scheme (a proxy's Basic auth) is ignored.
  if (bearer !== null) {
    const hash = apiKeyLookupHash(bearer);
    if (!hash) return null;
    const key = await apiKeyByHash(deps.pool, hash);
    if (!key) return null;
    if (activityDue(key.lastUsedAt, 60_000)) background(deps, touchApiKey(deps.pool, key.id));
    if (activityDue(key.userLastActiveAt, 300_000)) background(deps, touchUser(deps.pool, key.userId));
    const summary = await factorSummary(deps.pool, key.userId);
    // A key was created by a session that had passed its factor; it stands in for that proof.
    const ok = secondFactorOk({ required: deps.config.REQUIRE_2FA, ...readableFactors(deps.config, summary), sessionVerified: true });
    return { id: key.userId, email: key.email ?? '', method: 'api_key', readOnly: key.readOnly, secondFactorOk: ok, isAdmin: false, ...(key.expiresAt ? { expiresAt: key.expiresAt.toISOString() } : {}) };
  }
  const found = await sessionFromCookie(deps, req.cookie);
  if (!found) return null;
  if (activityDue(found.session.lastActiveAt, 60_000)) background(deps, touchSession(deps.pool, found.session.id));
  if (activityDue(found.userLastActiveAt, 300_000)) background(deps, touchUser(deps.pool, found.session.userId));
  return {
    id: found.session.userId,
    email: found.email,
    method: 'session',
    readOnly: false,
    sessionId: found.session.id,
    secondFactorOk: secondFactorOk(found.state),
    isAdmin: false,
    // the gateway re-issues a legacy-named cookie with this expiry (proto session-cookie.ts)
    expiresAt: found.session.expires.toISOString(),
  };
}

/** `auth.identity.pending-page`: where the page gate sends a browser whose second factor is pending. */
export async function pendingPage(deps: AuthDeps, req: { cookie?: string | undefined }): Promise<{ page: '/setup/2fa' | '/login/2fa' | null }> {
  const found = await sessionFromCookie(deps, req.cookie);
  return { page: found ? pendingSecondFactorPage(found.state) : null };
}

/**
 * Run an account change, then (before its reply leaves) tell every gateway to forget the identities
 * it cached for the user: a revoked key or a new second factor counts from the next request on.
 */
export async function changingIdentity<R>(bus: Bus, userId: string | undefined, change: () => Promise<R>): Promise<R> {
  try {
    return await change();
  } finally {
    if (userId) bus.broadcast(IDENTITY_CHANGED_SUBJECT, { userId });
  }
}
