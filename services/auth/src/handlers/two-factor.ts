import { AppError, type HttpCall } from '@tasksvc/proto';
import { decryptSecret, encryptSecret, inTransaction } from '@tasksvc/runtime';
import {
  assertAttemptsLeft,
  assertCanEnrol,
  assertCanRemoveFactor,
  factorCount,
  FAILED_CODE_WINDOW_MINUTES,
  pendingSecondFactorPage,
  secondFactorOk,
} from '../domain/second-factor.ts';
import { backupCodeHash, checkTotp, isTotpShaped, newBackupCodes, newTotpSecret, totpUri } from '../domain/totp.ts';
import {
  backupCodesRemaining,
  clearFailures,
  deleteTotp,
  enableTotp,
  factorSummary,
  lockUserFactors,
  recordTotpStep,
  replaceBackupCodes,
  reserveAttempt,
  totpFor,
  upsertPendingTotp,
  useBackupCode,
} from '../db/factors.ts';
import { markSecondFactorVerified } from '../db/sessions.ts';
import { factorState, readableFactors, requireSession, type AuthDeps } from './context.ts';

type CodeCall = HttpCall<unknown, unknown, { code: string }>;
type EmptyCall = HttpCall<unknown, unknown, unknown>;

const invalidCode = (message: string) => new AppError('VALIDATION_FAILED', message, [{ path: 'body.code', message }]);

function encryptionKey(deps: AuthDeps): string {
  const key = deps.config.TOTP_ENCRYPTION_KEY;
  if (!key) throw new AppError('SERVICE_UNAVAILABLE', 'TOTP is not available: the operator has not set TOTP_ENCRYPTION_KEY');
  return key;
}

function decryptOrExplain(key: string, stored: string): string {
  try {
    return decryptSecret(key, stored);
  } catch {
    throw new AppError('CONFLICT', 'the stored TOTP secret cannot be decrypted (TOTP_ENCRYPTION_KEY was changed): remove TOTP and enrol again');
  }
}

/** Accept a TOTP code against the user's enabled secret, refusing a replayed step. */
async function acceptTotp(deps: AuthDeps, userId: string, code: string, epoch?: number): Promise<boolean> {
  const key = encryptionKey(deps);
  return inTransaction(deps.pool, async (tx) => {
    const row = await totpFor(tx, userId, true);
    if (!row?.enabledAt) return false;
    const step = await checkTotp(decryptOrExplain(key, row.secretEncrypted), code, row.lastTimeStep === null ? null : Number(row.lastTimeStep), epoch);
    if (step === null) return false;
    await recordTotpStep(tx, userId, step);
    return true;
  });
}

export function twoFactorHandlers(deps: AuthDeps, opts: { clock?: () => number } = {}) {
  /** seconds since the epoch; tests pin it so no test waits for a 30-second step */
  const epoch = () => (opts.clock ? opts.clock() : undefined);
  return {
    status: async (call: EmptyCall) => {
      const s = requireSession(call.user);
      const state = await factorState(deps, s.userId, s.sessionId);
      return {
        required: state.required,
        totpEnabled: state.totpEnabled,
        passkeys: state.passkeys,
        backupCodesRemaining: await backupCodesRemaining(deps.pool, s.userId),
        sessionVerified: state.sessionVerified,
        secondFactorOk: secondFactorOk(state),
        pendingPage: pendingSecondFactorPage(state),
      };
    },

    totpSetup: async (call: EmptyCall) => {
      const s = requireSession(call.user);
      const key = encryptionKey(deps);
      const state = await factorState(deps, s.userId, s.sessionId);
      assertCanEnrol(state);
      if (state.totpEnabled) throw new AppError('CONFLICT', 'TOTP is already enabled: remove it first to enrol a new authenticator');
      const secret = newTotpSecret();
      const stored = encryptSecret(key, secret);
      const started = await inTransaction(deps.pool, async (tx) => {
        // a secret the current key cannot open (TOTP_ENCRYPTION_KEY was rotated) is replaced by the new enrolment
        if (state.totpStale) await deleteTotp(tx, s.userId);
        return upsertPendingTotp(tx, s.userId, stored);
      });
      if (!started) throw new AppError('CONFLICT', 'TOTP is already enabled');
      return { secret, otpauthUri: totpUri(secret, s.email || s.userId, deps.config.WEBAUTHN_RP_NAME) };
    },

    totpEnable: async (call: CodeCall) => {
      const s = requireSession(call.user);
      const key = encryptionKey(deps);
      const codes = newBackupCodes();
      await inTransaction(deps.pool, async (tx) => {
        await lockUserFactors(tx, s.userId);
        const state = await factorState(deps, s.userId, s.sessionId);
        assertCanEnrol(state);
        const row = await totpFor(tx, s.userId, true);
        if (!row) throw new AppError('CONFLICT', 'start TOTP enrolment first (POST /api/auth/2fa/totp/setup)');
        if (row.enabledAt) throw new AppError('CONFLICT', 'TOTP is already enabled');
        const step = await checkTotp(decryptOrExplain(key, row.secretEncrypted), call.body.code, null, epoch());
        if (step === null) throw invalidCode('the code does not match: check the authenticator app and the device clock');
        await enableTotp(tx, s.userId, step);
        await replaceBackupCodes(tx, s.userId, codes.map((c) => backupCodeHash(c)!));
        await markSecondFactorVerified(tx, s.sessionId, s.userId);
      });
      return { backupCodes: codes };
    },

    totpDisable: async (call: EmptyCall) => {
      const s = requireSession(call.user);
      await inTransaction(deps.pool, async (tx) => {
        await lockUserFactors(tx, s.userId);
        const summary = readableFactors(deps.config, await factorSummary(tx, s.userId));
        if (!summary.totpEnabled && !summary.totpStale) throw new AppError('NOT_FOUND', 'TOTP is not enabled');
        // an unreadable secret protects nothing: removing it never removes the last factor
        if (summary.totpEnabled) assertCanRemoveFactor({ required: deps.config.REQUIRE_2FA, ...summary, sessionVerified: true });
        await deleteTotp(tx, s.userId);
      });
      return null;
    },

    verify: async (call: CodeCall) => {
      const s = requireSession(call.user);
      const state = await factorState(deps, s.userId, s.sessionId);
      if (factorCount(state) === 0) throw new AppError('CONFLICT', 'no second factor is registered: set one up at /setup/2fa');
      // The attempt is counted (as a failure) before the code is checked and forgotten on success.
      assertAttemptsLeft(await reserveAttempt(deps.pool, s.userId, FAILED_CODE_WINDOW_MINUTES));
      const code = call.body.code;
      let method: 'totp' | 'backup_code' | null = null;
      if (isTotpShaped(code)) {
        if (state.totpEnabled && (await acceptTotp(deps, s.userId, code, epoch()))) method = 'totp';
      } else {
        const hash = backupCodeHash(code);
        if (hash && (await useBackupCode(deps.pool, s.userId, hash))) method = 'backup_code';
      }
      if (!method) throw invalidCode('invalid or already used code');
      await clearFailures(deps.pool, s.userId);
      await markSecondFactorVerified(deps.pool, s.sessionId, s.userId);
      return { method, backupCodesRemaining: await backupCodesRemaining(deps.pool, s.userId) };
    },

    regenerateBackupCodes: async (call: EmptyCall) => {
      const s = requireSession(call.user);
      const summary = readableFactors(deps.config, await factorSummary(deps.pool, s.userId));
      if (factorCount(summary) === 0) throw new AppError('CONFLICT', 'backup codes need a second factor: set one up first');
      const codes = newBackupCodes();
      await inTransaction(deps.pool, (tx) => replaceBackupCodes(tx, s.userId, codes.map((c) => backupCodeHash(c)!)));
      return { backupCodes: codes };
    },
  };
}
