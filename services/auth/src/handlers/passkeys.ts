import type * as WebAuthn from '@simplewebauthn/server';
import { AppError, serializeSessionCookie, type HttpCall, type RawResponse } from '@tasksvc/proto';
import { randomUUID } from 'node:crypto';
import { inTransaction, safeEqual, type Config, type Pool, type PoolClient } from '@tasksvc/runtime';
import { assertCanEnrol, assertCanRemoveFactor } from '../domain/second-factor.ts';
import { generateSessionToken, SESSION_MAX_AGE_SECONDS, sessionTokenHash } from '../domain/tokens.ts';
import {
  authenticatorByCredentialId,
  authenticatorExists,
  deleteAuthenticator,
  factorSummary,
  insertAuthenticator,
  insertChallenge,
  listAuthenticators,
  lockUserFactors,
  recordAuthenticatorUse,
  takeChallenge,
  type AuthenticatorRow,
  type ChallengePurpose,
} from '../db/factors.ts';
import { insertSession, markSecondFactorVerified } from '../db/sessions.ts';
import { insertUser, touchUser } from '../db/users.ts';
import { clientKey } from '../domain/client-key.ts';
import { factorState, publicOrigin, readableFactors, requireSession, secureCookies, type AuthDeps } from './context.ts';

const CHALLENGE_TTL_SECONDS = 300;

/**
 * The WebAuthn library is loaded by the first passkey ceremony, not at start: with its ASN.1 and
 * X.509 stack it was the auth service's largest import (about 6 MB of heap kept and half a second
 * of its start, tools/bench/footprint.ts), and sessions and API keys, what the auth service mostly
 * answers, never need it.
 */
let webauthnLibrary: Promise<typeof WebAuthn> | undefined;
const webauthn = () => (webauthnLibrary ??= import('@simplewebauthn/server'));
type EmptyCall = HttpCall<unknown, unknown, unknown>;
type Credential = { id: string; rawId: string; type: 'public-key'; response: Record<string, unknown>; clientExtensionResults: Record<string, unknown>; authenticatorAttachment?: string | undefined };

const signupOff = () => new AppError('NOT_FOUND', 'creating accounts with a passkey is switched off on this server (SIGNUP_WITH_PASSKEY)');

/** Sign-up is on, and the invitation code (when one is configured) matches. */
function assertSignupAllowed(config: Config, inviteCode: string | undefined): void {
  if (!config.SIGNUP_WITH_PASSKEY) throw signupOff();
  const expected = config.SIGNUP_INVITE_CODE;
  if (expected && !safeEqual(inviteCode ?? '', expected)) {
    throw new AppError('FORBIDDEN', 'the invitation code is missing or wrong', [{ path: 'body.inviteCode', message: 'does not match the invitation code of this server' }]);
  }
}

const badResponse = (message: string) => new AppError('VALIDATION_FAILED', message, [{ path: 'body.response', message }]);
const expiredChallenge = () => new AppError('VALIDATION_FAILED', 'the ceremony expired or was already used: start again', [{ path: 'body.challengeId', message: 'unknown or expired challenge' }]);

function summary(a: AuthenticatorRow) {
  return { id: a.id, name: a.name, createdAt: a.createdAt.toISOString(), lastUsedAt: a.lastUsedAt?.toISOString() ?? null, backedUp: a.backedUp };
}

function uuidBytes(id: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(Buffer.from(id.replace(/-/g, ''), 'hex'));
}

export function passkeyHandlers(deps: AuthDeps) {
  const rpID = deps.config.WEBAUTHN_RP_ID;
  const origin = publicOrigin(deps.config);

  async function challengeFor(purpose: ChallengePurpose, userId: string, challenge: string): Promise<string> {
    return insertChallenge(deps.pool, { purpose, userId, challenge, ttlSeconds: CHALLENGE_TTL_SECONDS });
  }

  /** Anonymous ceremonies are bounded per client address (a few live challenges each). */
  async function anonymousChallenge(purpose: 'login' | 'signup', ip: string | undefined, challenge: string, signup?: { userId: string; name: string }): Promise<string> {
    return insertChallenge(deps.pool, { purpose, userId: null, challenge, ttlSeconds: CHALLENGE_TTL_SECONDS, clientKey: clientKey(ip), ...(signup ? { signup } : {}) });
  }

  async function verifyRegistration(challenge: string, response: Credential, requireUserVerification: boolean) {
    const { verifyRegistrationResponse } = await webauthn();
    let result;
    try {
      result = await verifyRegistrationResponse({
        response: response as unknown as WebAuthn.RegistrationResponseJSON,
        expectedChallenge: challenge,
        expectedOrigin: origin,
        expectedRPID: rpID,
        requireUserVerification,
      });
    } catch (err) {
      throw badResponse(`passkey registration failed: ${(err as Error).message}`);
    }
    if (!result.verified) throw badResponse('passkey registration failed');
    return result.registrationInfo;
  }

  /** A new session for a user-verified passkey: possession plus PIN/biometric counts as the second factor too. */
  async function signIn(userId: string, call: { ip?: string | undefined; userAgent?: string | undefined }, db: Pool | PoolClient = deps.pool): Promise<RawResponse> {
    const token = generateSessionToken();
    const expires = new Date(Date.now() + SESSION_MAX_AGE_SECONDS * 1000);
    await insertSession(db, {
      tokenHash: sessionTokenHash(deps.config.AUTH_SECRET, token),
      userId,
      expires,
      ip: call.ip,
      userAgent: call.userAgent,
      secondFactorVerified: true,
    });
    await touchUser(db, userId);
    return {
      status: 200,
      contentType: 'application/json',
      headers: { 'set-cookie': serializeSessionCookie(token, expires, secureCookies(deps.config)), 'cache-control': 'no-store' },
      body: JSON.stringify({ userId }),
    };
  }

  /** Check an assertion against a stored passkey and advance its signature counter. */
  async function verifyAssertion(challenge: string, response: Credential, authenticator: AuthenticatorRow, requireUserVerification: boolean): Promise<void> {
    const { verifyAuthenticationResponse } = await webauthn();
    let result;
    try {
      result = await verifyAuthenticationResponse({
        response: response as unknown as WebAuthn.AuthenticationResponseJSON,
        expectedChallenge: challenge,
        expectedOrigin: origin,
        expectedRPID: rpID,
        requireUserVerification,
        credential: {
          id: authenticator.credentialId,
          publicKey: new Uint8Array(authenticator.publicKey),
          counter: Number(authenticator.counter),
          transports: authenticator.transports,
        },
      });
    } catch (err) {
      throw badResponse(`passkey check failed: ${(err as Error).message}`);
    }
    if (!result.verified) throw badResponse('passkey check failed');
    await recordAuthenticatorUse(deps.pool, authenticator.id, result.authenticationInfo.newCounter);
  }

  return {
    list: async (call: EmptyCall) => {
      const s = requireSession(call.user);
      return { passkeys: (await listAuthenticators(deps.pool, s.userId)).map(summary) };
    },

    registerOptions: async (call: EmptyCall) => {
      const s = requireSession(call.user);
      assertCanEnrol(await factorState(deps, s.userId, s.sessionId));
      const existing = await listAuthenticators(deps.pool, s.userId);
      const options = await (await webauthn()).generateRegistrationOptions({
        rpName: deps.config.WEBAUTHN_RP_NAME,
        rpID,
        userName: s.email || s.userId,
        userID: uuidBytes(s.userId),
        attestationType: 'none',
        excludeCredentials: existing.map((a) => ({ id: a.credentialId, transports: a.transports })),
        authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
      });
      return { challengeId: await challengeFor('register', s.userId, options.challenge), options: options as unknown as Record<string, unknown> };
    },

    registerVerify: async (call: HttpCall<unknown, unknown, { challengeId: string; name?: string | undefined; response: Credential }>) => {
      const s = requireSession(call.user);
      const taken = await takeChallenge(deps.pool, call.body.challengeId, 'register', s.userId);
      if (!taken) throw expiredChallenge();
      const { credential, credentialDeviceType, credentialBackedUp } = await verifyRegistration(taken.challenge, call.body.response, false);
      const row = await inTransaction(deps.pool, async (tx) => {
        await lockUserFactors(tx, s.userId);
        assertCanEnrol(await factorState(deps, s.userId, s.sessionId));
        if (await authenticatorByCredentialId(tx, credential.id)) throw new AppError('CONFLICT', 'this passkey is already registered');
        const inserted = await insertAuthenticator(tx, {
          userId: s.userId,
          credentialId: credential.id,
          publicKey: credential.publicKey,
          counter: credential.counter,
          transports: credential.transports ?? [],
          deviceType: credentialDeviceType,
          backedUp: credentialBackedUp,
          name: call.body.name ?? 'Passkey',
        });
        // Registering a factor proves it for this session: the REQUIRE_2FA restriction lifts at once.
        await markSecondFactorVerified(tx, s.sessionId, s.userId);
        return inserted;
      });
      return summary(row);
    },

    remove: async (call: HttpCall<{ id: string }, unknown, unknown>) => {
      const s = requireSession(call.user);
      await inTransaction(deps.pool, async (tx) => {
        await lockUserFactors(tx, s.userId);
        if (!(await authenticatorExists(tx, call.params.id, s.userId))) throw new AppError('NOT_FOUND', 'no such passkey');
        assertCanRemoveFactor({ required: deps.config.REQUIRE_2FA, ...readableFactors(deps.config, await factorSummary(tx, s.userId)), sessionVerified: true });
        await deleteAuthenticator(tx, call.params.id, s.userId);
      });
      return null;
    },

    /** Passwordless: any discoverable credential for this RP. */
    loginOptions: async (call: EmptyCall) => {
      const options = await (await webauthn()).generateAuthenticationOptions({ rpID, userVerification: 'required' });
      return { challengeId: await anonymousChallenge('login', call.ip, options.challenge), options: options as unknown as Record<string, unknown> };
    },

    login: async (call: HttpCall<unknown, unknown, { challengeId: string; response: Credential }>): Promise<RawResponse> => {
      const taken = await takeChallenge(deps.pool, call.body.challengeId, 'login', null);
      if (!taken) throw expiredChallenge();
      const authenticator = await authenticatorByCredentialId(deps.pool, call.body.response.id);
      if (!authenticator) throw new AppError('UNAUTHENTICATED', 'this passkey is not registered here');
      await verifyAssertion(taken.challenge, call.body.response, authenticator, true);
      return signIn(authenticator.userId, call);
    },

    signupInfo: async () => ({ enabled: deps.config.SIGNUP_WITH_PASSKEY, inviteRequired: deps.config.SIGNUP_WITH_PASSKEY && Boolean(deps.config.SIGNUP_INVITE_CODE) }),

    /** Passkey-only accounts (SIGNUP_WITH_PASSKEY): a discoverable, user-verified credential is the whole login. */
    signupOptions: async (call: HttpCall<unknown, unknown, { name: string; inviteCode?: string | undefined }>) => {
      assertSignupAllowed(deps.config, call.body.inviteCode);
      const userId = randomUUID();
      const options = await (await webauthn()).generateRegistrationOptions({
        rpName: deps.config.WEBAUTHN_RP_NAME,
        rpID,
        userName: call.body.name,
        userID: uuidBytes(userId),
        attestationType: 'none',
        authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
      });
      const challengeId = await anonymousChallenge('signup', call.ip, options.challenge, { userId, name: call.body.name });
      return { challengeId, options: options as unknown as Record<string, unknown> };
    },

    signup: async (call: HttpCall<unknown, unknown, { challengeId: string; response: Credential }>): Promise<RawResponse> => {
      if (!deps.config.SIGNUP_WITH_PASSKEY) throw signupOff();
      const taken = await takeChallenge(deps.pool, call.body.challengeId, 'signup', null);
      if (!taken?.signupUserId || !taken.signupName) throw expiredChallenge();
      const { signupUserId: userId, signupName: name } = taken;
      const { credential, credentialDeviceType, credentialBackedUp } = await verifyRegistration(taken.challenge, call.body.response, true);
      return inTransaction(deps.pool, async (tx) => {
        if (await authenticatorByCredentialId(tx, credential.id)) throw new AppError('CONFLICT', 'this passkey is already registered');
        await insertUser(tx, { id: userId, email: null, name, image: null, emailVerified: null });
        await insertAuthenticator(tx, {
          userId,
          credentialId: credential.id,
          publicKey: credential.publicKey,
          counter: credential.counter,
          transports: credential.transports ?? [],
          deviceType: credentialDeviceType,
          backedUp: credentialBackedUp,
          name: 'Passkey',
        });
        return signIn(userId, call, tx);
      });
    },

    /** Second factor: one of this user's passkeys. */
    verifyOptions: async (call: EmptyCall) => {
      const s = requireSession(call.user);
      const mine = await listAuthenticators(deps.pool, s.userId);
      if (mine.length === 0) throw new AppError('CONFLICT', 'no passkey is registered');
      const options = await (await webauthn()).generateAuthenticationOptions({
        rpID,
        userVerification: 'preferred',
        allowCredentials: mine.map((a) => ({ id: a.credentialId, transports: a.transports })),
      });
      return { challengeId: await challengeFor('second_factor', s.userId, options.challenge), options: options as unknown as Record<string, unknown> };
    },

    verify: async (call: HttpCall<unknown, unknown, { challengeId: string; response: Credential }>) => {
      const s = requireSession(call.user);
      const taken = await takeChallenge(deps.pool, call.body.challengeId, 'second_factor', s.userId);
      if (!taken) throw expiredChallenge();
      const authenticator = await authenticatorByCredentialId(deps.pool, call.body.response.id);
      if (!authenticator || authenticator.userId !== s.userId) throw badResponse('this passkey does not belong to the signed-in user');
      await verifyAssertion(taken.challenge, call.body.response, authenticator, false);
      await markSecondFactorVerified(deps.pool, s.sessionId, s.userId);
      return { method: 'passkey' as const };
    },
  };
}
