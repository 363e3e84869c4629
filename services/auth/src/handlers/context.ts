import { AppError, secureSessionCookies, type Identity } from '@tasksvc/proto';
import { decryptSecret, type Bus, type Config, type Logger, type Pool } from '@tasksvc/runtime';
import type { FactorState } from '../domain/second-factor.ts';
import { factorSummary } from '../db/factors.ts';
import { sessionById } from '../db/sessions.ts';

export interface AuthDeps {
  config: Config;
  pool: Pool;
  bus: Bus;
  log: Logger;
}

/** The caller, known to be signed in with a browser session (not an API key). */
export interface SessionCaller {
  userId: string;
  sessionId: string;
  email: string;
}

export function requireUser(user: Identity | null): Identity {
  if (!user) throw new AppError('UNAUTHENTICATED', 'sign in first');
  return user;
}

/** Second-factor and session management need a browser session: API keys cannot change them. */
export function requireSession(user: Identity | null): SessionCaller {
  const u = requireUser(user);
  if (u.method !== 'session' || !u.sessionId) throw new AppError('FORBIDDEN', 'this needs a signed-in browser session, not an API key');
  return { userId: u.id, sessionId: u.sessionId, email: u.email };
}

/** Whether TOTP_ENCRYPTION_KEY opens a stored TOTP secret, by key and stored form (bounded; cleared when full). */
const opens = new Map<string, boolean>();

/**
 * A TOTP secret the current TOTP_ENCRYPTION_KEY cannot open (the key was rotated, as the spec allows)
 * protects nothing any more: it counts as no factor, so under REQUIRE_2FA the user is sent to the
 * enrolment page after the first factor, and it can be removed or replaced by a new enrolment.
 */
export function readableFactors(config: Pick<Config, 'TOTP_ENCRYPTION_KEY'>, summary: { totpEnabled: boolean; passkeys: number; totpSecretEncrypted: string | null }): { totpEnabled: boolean; totpStale: boolean; passkeys: number } {
  const stored = summary.totpSecretEncrypted;
  if (!summary.totpEnabled || stored === null) return { totpEnabled: false, totpStale: false, passkeys: summary.passkeys };
  const key = config.TOTP_ENCRYPTION_KEY;
  let readable = false;
  if (key) {
    const cacheKey = `${key}\n${stored}`;
    const known = opens.get(cacheKey);
    if (known !== undefined) readable = known;
    else {
      try {
        decryptSecret(key, stored);
        readable = true;
      } catch {
        readable = false;
      }
      if (opens.size >= 10_000) opens.clear();
      opens.set(cacheKey, readable);
    }
  }
  return { totpEnabled: readable, totpStale: !readable, passkeys: summary.passkeys };
}

/** The inputs of the second-factor rules for this user and session, read fresh from the database. */
export async function factorState(deps: AuthDeps, userId: string, sessionId: string | undefined): Promise<FactorState> {
  const [summary, session] = await Promise.all([factorSummary(deps.pool, userId), sessionId ? sessionById(deps.pool, sessionId, userId) : Promise.resolve(null)]);
  return { required: deps.config.REQUIRE_2FA, ...readableFactors(deps.config, summary), sessionVerified: Boolean(session?.secondFactorVerifiedAt) };
}

/** The public origin the browser sees (WebAuthn's expected origin). */
export function publicOrigin(config: Config): string {
  return new URL(config.PUBLIC_APP_URL).origin;
}

/** Cookies are prefixed (`__Host-` for the session, proto session-cookie.ts) and Secure when the callback origin is https. */
export function secureCookies(config: Config): boolean {
  return secureSessionCookies(config.AUTH_CALLBACK_URL);
}
