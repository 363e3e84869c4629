import { AppError } from '@tasksvc/proto';

/** What the second-factor rules need to know about a user and the session in use. */
export interface FactorState {
  /** REQUIRE_2FA */
  required: boolean;
  /** TOTP is on and TOTP_ENCRYPTION_KEY opens its secret (a secret it cannot open is no factor: totpStale) */
  totpEnabled: boolean;
  /** TOTP is on but its secret no longer opens (the key was rotated): it may be replaced or removed */
  totpStale?: boolean;
  passkeys: number;
  /** the session has proven a factor (second_factor_verified_at is set) */
  sessionVerified: boolean;
}

export function factorCount(s: Pick<FactorState, 'totpEnabled' | 'passkeys'>): number {
  return (s.totpEnabled ? 1 : 0) + s.passkeys;
}

/**
 * May this session reach protected routes?
 * - a user with a factor must have proven it in this session;
 * - a user without one is let through unless the operator requires a factor (then only /setup/2fa).
 */
export function secondFactorOk(s: FactorState): boolean {
  if (factorCount(s) > 0) return s.sessionVerified;
  return !s.required;
}

/**
 * Which page a browser that is not `secondFactorOk` belongs on: enrolment when the user has no factor,
 * the login challenge when they have one but this session has not proven it.
 */
export function pendingSecondFactorPage(s: FactorState): '/setup/2fa' | '/login/2fa' | null {
  if (secondFactorOk(s)) return null;
  return factorCount(s) > 0 ? '/login/2fa' : '/setup/2fa';
}

/**
 * Enrolling a factor is allowed to a user with none yet (that is the forced setup), or to a session
 * that has proven an existing factor. Otherwise a stolen first-factor session could add its own.
 */
export function assertCanEnrol(s: FactorState): void {
  if (factorCount(s) > 0 && !s.sessionVerified) throw new AppError('SECOND_FACTOR_REQUIRED', 'verify your existing second factor first');
}

/** Removing the last factor while REQUIRE_2FA is true is refused with 403 TOTP_REQUIRED_BY_ADMIN. */
export function assertCanRemoveFactor(s: FactorState): void {
  if (s.required && factorCount(s) <= 1) {
    throw new AppError('TOTP_REQUIRED_BY_ADMIN', 'the administrator requires a second factor: register another one before removing this one');
  }
}

/** Wrong second-factor codes allowed per user in the window before further attempts are refused (429). */
export const MAX_FAILED_CODES = 10;
export const FAILED_CODE_WINDOW_MINUTES = 15;

/** `attempt`: this attempt's number in the current window, reserved before the code is checked. */
export function assertAttemptsLeft(attempt: number): void {
  if (attempt > MAX_FAILED_CODES) {
    throw new AppError('RATE_LIMITED', `too many wrong codes: try again in ${FAILED_CODE_WINDOW_MINUTES} minutes`);
  }
}
