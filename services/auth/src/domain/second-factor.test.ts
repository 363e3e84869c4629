import { AppError } from '@tasksvc/proto';
import { describe, expect, it } from 'vitest';
import { assertAttemptsLeft, assertCanEnrol, assertCanRemoveFactor, MAX_FAILED_CODES, pendingSecondFactorPage, secondFactorOk, type FactorState } from './second-factor.ts';

const state = (s: Partial<FactorState>): FactorState => ({ required: false, totpEnabled: false, passkeys: 0, sessionVerified: false, ...s });
const codeOf = (fn: () => void): string | null => {
  try {
    fn();
    return null;
  } catch (err) {
    return (err as AppError).code;
  }
};

describe('secondFactorOk / pendingSecondFactorPage', () => {
  it.each([
    // required, totp, passkeys, verified → ok, page
    [false, false, 0, false, true, null],
    [true, false, 0, false, false, '/setup/2fa'],
    [true, false, 0, true, false, '/setup/2fa'],
    [false, true, 0, false, false, '/login/2fa'],
    [false, true, 0, true, true, null],
    [true, true, 0, true, true, null],
    [true, false, 2, false, false, '/login/2fa'],
    [false, false, 1, true, true, null],
  ] as const)('required=%s totp=%s passkeys=%s verified=%s → ok=%s page=%s', (required, totpEnabled, passkeys, sessionVerified, ok, page) => {
    const s = state({ required, totpEnabled, passkeys, sessionVerified });
    expect(secondFactorOk(s)).toBe(ok);
    expect(pendingSecondFactorPage(s)).toBe(page);
  });
});

describe('enrolment and removal rules', () => {
  it('a user without a factor may enrol; one with a factor only from a verified session', () => {
    expect(codeOf(() => assertCanEnrol(state({ required: true })))).toBeNull();
    expect(codeOf(() => assertCanEnrol(state({ totpEnabled: true })))).toBe('SECOND_FACTOR_REQUIRED');
    expect(codeOf(() => assertCanEnrol(state({ passkeys: 1, sessionVerified: true })))).toBeNull();
  });

  it('the last factor cannot go while REQUIRE_2FA is true (TOTP_REQUIRED_BY_ADMIN, HTTP 403)', () => {
    let err: unknown;
    try {
      assertCanRemoveFactor(state({ required: true, totpEnabled: true }));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('TOTP_REQUIRED_BY_ADMIN');
    expect((err as AppError).status).toBe(403);
    expect(codeOf(() => assertCanRemoveFactor(state({ required: true, passkeys: 1 })))).toBe('TOTP_REQUIRED_BY_ADMIN');
    expect(codeOf(() => assertCanRemoveFactor(state({ required: true, totpEnabled: true, passkeys: 1 })))).toBeNull();
    expect(codeOf(() => assertCanRemoveFactor(state({ required: false, totpEnabled: true })))).toBeNull();
  });

  it('limits wrong codes', () => {
    expect(codeOf(() => assertAttemptsLeft(MAX_FAILED_CODES))).toBeNull();
    expect(codeOf(() => assertAttemptsLeft(MAX_FAILED_CODES + 1))).toBe('RATE_LIMITED');
  });
});
