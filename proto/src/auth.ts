import { z } from 'zod';
import { defineRpc } from './bus.ts';
import { defineRoute, identity, rawResponse, type AnyRoute } from './http.ts';

/**
 * The gateway asks the auth service who a request belongs to, from its session cookie or its
 * `Authorization: Bearer <api key>` header. Null means anonymous.
 */
export const resolveIdentityRpc = defineRpc(
  'auth.identity.resolve',
  z.object({ cookie: z.string().optional(), authorization: z.string().optional() }),
  identity.nullable(),
);

/**
 * Broadcast (not durable) by the auth service after any change a user makes to their account (API
 * keys, second factors, sessions): every gateway replica drops the identities it cached for them.
 */
export const IDENTITY_CHANGED_SUBJECT = 'auth.identity.changed';
export const identityChanged = z.object({ userId: z.string() });

/**
 * Where a signed-in browser that has not passed its second factor belongs: `/setup/2fa` (no factor
 * yet, REQUIRE_2FA) or `/login/2fa` (has one, this session has not proven it); null when nothing is
 * pending or the caller is anonymous. Used by the gateway's page gate.
 */
export const secondFactorPageRpc = defineRpc(
  'auth.identity.pending-page',
  z.object({ cookie: z.string().optional() }),
  z.object({ page: z.enum(['/setup/2fa', '/login/2fa']).nullable() }),
);

/**
 * Auth.js runs in the auth service; the gateway forwards every `/api/auth/*` request that is not one
 * of the routes below as it came: method, path with query, headers, raw body. The reply keeps every
 * header, several Set-Cookie included, as ordered name/value pairs.
 */
export const authjsRequest = z.object({
  method: z.string().max(10),
  /** path and query, e.g. `/api/auth/callback/oidc?code=…` */
  path: z.string().max(8192),
  headers: z.record(z.string(), z.string()),
  body: z.string().optional(),
  ip: z.string().optional(),
});
export type AuthjsRequest = z.infer<typeof authjsRequest>;
export const authjsResponse = z.object({
  status: z.number().int(),
  headers: z.array(z.tuple([z.string(), z.string()])),
  body: z.string(),
});
export type AuthjsResponse = z.infer<typeof authjsResponse>;
export const authjsRpc = defineRpc('auth.authjs.handle', authjsRequest, authjsResponse);

// ---- HTTP routes ------------------------------------------------------------------------------

const code = z.object({ code: z.string().trim().min(1, 'is required').max(32) }).strict();
const idParam = z.object({ id: z.uuid() }).strict();
const backupCodes = z.object({ backupCodes: z.array(z.string()) });

export const twoFactorStatus = z.object({
  /** REQUIRE_2FA */
  required: z.boolean(),
  totpEnabled: z.boolean(),
  passkeys: z.number().int(),
  backupCodesRemaining: z.number().int(),
  /** this session has proven a factor */
  sessionVerified: z.boolean(),
  secondFactorOk: z.boolean(),
  /** the page the browser belongs on until the second factor is settled */
  pendingPage: z.enum(['/setup/2fa', '/login/2fa']).nullable(),
});

export const passkeySummary = z.object({
  id: z.uuid(),
  name: z.string(),
  createdAt: z.string(),
  lastUsedAt: z.string().nullable(),
  backedUp: z.boolean(),
});

/** A WebAuthn credential as @simplewebauthn/browser returns it (checked in depth by the server library). */
const webauthnCredential = z
  .object({
    id: z.string().min(1).max(1024),
    rawId: z.string().min(1).max(1024),
    type: z.literal('public-key'),
    response: z.looseObject({ clientDataJSON: z.string().max(65536) }),
    clientExtensionResults: z.record(z.string(), z.unknown()).default({}),
    authenticatorAttachment: z.string().max(32).optional(),
  })
  .strict();

const ceremonyOptions = z.object({ challengeId: z.uuid(), options: z.record(z.string(), z.unknown()) });

export const sessionSummary = z.object({
  id: z.uuid(),
  current: z.boolean(),
  createdAt: z.string(),
  lastActiveAt: z.string(),
  expiresAt: z.string(),
  userAgent: z.string().nullable(),
  ip: z.string().nullable(),
  secondFactorVerifiedAt: z.string().nullable(),
});

export const apiKeySummary = z.object({
  id: z.uuid(),
  name: z.string(),
  /** the first characters of the key, to tell keys apart */
  prefix: z.string(),
  readOnly: z.boolean(),
  expiresAt: z.string().nullable(),
  createdAt: z.string(),
  lastUsedAt: z.string().nullable(),
});


export const authApi = {
  me: defineRoute({
    method: 'GET',
    path: '/api/auth/me',
    auth: 'setup',
    subject: 'auth.http.me',
    response: z.object({ id: z.uuid(), email: z.string(), name: z.string().nullable(), isAdmin: z.boolean(), secondFactorOk: z.boolean(), method: z.string() }),
    summary: 'The signed-in user',
    tag: 'auth',
  }),
  twoFactorStatus: defineRoute({
    method: 'GET',
    path: '/api/auth/2fa/status',
    auth: 'setup',
    subject: 'auth.http.2fa.status',
    response: twoFactorStatus,
    summary: 'Second-factor state of the user and this session',
    tag: 'auth',
  }),
  totpSetup: defineRoute({
    method: 'POST',
    path: '/api/auth/2fa/totp/setup',
    auth: 'setup',
    subject: 'auth.http.2fa.totp.setup',
    status: 200,
    response: z.object({ secret: z.string(), otpauthUri: z.string() }),
    summary: 'Start TOTP enrolment: a new secret to scan (not active until confirmed)',
    tag: 'auth',
  }),
  totpEnable: defineRoute({
    method: 'POST',
    path: '/api/auth/2fa/totp/enable',
    auth: 'setup',
    subject: 'auth.http.2fa.totp.enable',
    body: code,
    status: 200,
    response: backupCodes,
    summary: 'Confirm TOTP enrolment with a current code; returns 10 one-time backup codes',
    tag: 'auth',
  }),
  totpDisable: defineRoute({
    method: 'DELETE',
    path: '/api/auth/2fa/totp',
    auth: 'user',
    subject: 'auth.http.2fa.totp.disable',
    status: 204,
    response: z.null(),
    summary: 'Remove TOTP (403 TOTP_REQUIRED_BY_ADMIN when it is the last factor and REQUIRE_2FA is true)',
    tag: 'auth',
  }),
  verify: defineRoute({
    method: 'POST',
    path: '/api/auth/2fa/verify',
    auth: 'setup',
    subject: 'auth.http.2fa.verify',
    body: code,
    status: 200,
    response: z.object({ method: z.enum(['totp', 'backup_code']), backupCodesRemaining: z.number().int() }),
    summary: 'Prove the second factor for this session with a TOTP or backup code',
    tag: 'auth',
  }),
  backupCodes: defineRoute({
    method: 'POST',
    path: '/api/auth/2fa/backup-codes',
    auth: 'user',
    subject: 'auth.http.2fa.backup-codes',
    status: 200,
    response: backupCodes,
    summary: 'Replace the backup codes with 10 new ones',
    tag: 'auth',
  }),
  passkeys: defineRoute({
    method: 'GET',
    path: '/api/auth/passkey',
    auth: 'user',
    subject: 'auth.http.passkey.list',
    response: z.object({ passkeys: z.array(passkeySummary) }),
    summary: 'Registered passkeys',
    tag: 'auth',
  }),
  passkeyRegisterOptions: defineRoute({
    method: 'POST',
    path: '/api/auth/passkey/register/options',
    auth: 'setup',
    subject: 'auth.http.passkey.register.options',
    status: 200,
    response: ceremonyOptions,
    summary: 'Options for navigator.credentials.create()',
    tag: 'auth',
  }),
  passkeyRegisterVerify: defineRoute({
    method: 'POST',
    path: '/api/auth/passkey/register/verify',
    auth: 'setup',
    subject: 'auth.http.passkey.register.verify',
    body: z.object({ challengeId: z.uuid(), name: z.string().trim().min(1).max(100).optional(), response: webauthnCredential }).strict(),
    response: passkeySummary,
    summary: 'Store a new passkey',
    tag: 'auth',
  }),
  passkeyDelete: defineRoute({
    method: 'DELETE',
    path: '/api/auth/passkey/:id',
    auth: 'user',
    subject: 'auth.http.passkey.delete',
    params: idParam,
    status: 204,
    response: z.null(),
    summary: 'Remove a passkey (403 TOTP_REQUIRED_BY_ADMIN when it is the last factor and REQUIRE_2FA is true)',
    tag: 'auth',
  }),
  passkeyLoginOptions: defineRoute({
    method: 'POST',
    path: '/api/auth/passkey/login/options',
    auth: 'none',
    subject: 'auth.http.passkey.login.options',
    status: 200,
    response: ceremonyOptions,
    summary: 'Options for a passwordless passkey sign-in (discoverable credentials)',
    tag: 'auth',
  }),
  passkeyLogin: defineRoute({
    method: 'POST',
    path: '/api/auth/passkey/login/verify',
    auth: 'none',
    subject: 'auth.http.passkey.login.verify',
    body: z.object({ challengeId: z.uuid(), response: webauthnCredential }).strict(),
    kind: 'raw',
    response: rawResponse,
    summary: 'Sign in with a passkey; sets the session cookie',
    tag: 'auth',
  }),
  passkeySignupInfo: defineRoute({
    method: 'GET',
    path: '/api/auth/passkey/signup',
    auth: 'none',
    subject: 'auth.http.passkey.signup.info',
    response: z.object({ enabled: z.boolean(), inviteRequired: z.boolean() }),
    summary: 'Whether new accounts can be created with a passkey alone (SIGNUP_WITH_PASSKEY) and whether an invitation code is needed',
    tag: 'auth',
  }),
  passkeySignupOptions: defineRoute({
    method: 'POST',
    path: '/api/auth/passkey/signup/options',
    auth: 'none',
    subject: 'auth.http.passkey.signup.options',
    body: z.object({ name: z.string().trim().min(1).max(100), inviteCode: z.string().max(200).optional() }).strict(),
    status: 200,
    response: ceremonyOptions,
    summary: 'Options for creating a passkey-only account (404 when SIGNUP_WITH_PASSKEY is off, 403 on a wrong invitation code)',
    tag: 'auth',
  }),
  passkeySignup: defineRoute({
    method: 'POST',
    path: '/api/auth/passkey/signup/verify',
    auth: 'none',
    subject: 'auth.http.passkey.signup.verify',
    body: z.object({ challengeId: z.uuid(), response: webauthnCredential }).strict(),
    kind: 'raw',
    response: rawResponse,
    summary: 'Create the account with its passkey and sign it in; sets the session cookie',
    tag: 'auth',
  }),
  passkeyVerifyOptions: defineRoute({
    method: 'POST',
    path: '/api/auth/passkey/2fa/options',
    auth: 'setup',
    subject: 'auth.http.passkey.2fa.options',
    status: 200,
    response: ceremonyOptions,
    summary: "Options for proving the second factor with one of the user's passkeys",
    tag: 'auth',
  }),
  passkeyVerify: defineRoute({
    method: 'POST',
    path: '/api/auth/passkey/2fa/verify',
    auth: 'setup',
    subject: 'auth.http.passkey.2fa.verify',
    body: z.object({ challengeId: z.uuid(), response: webauthnCredential }).strict(),
    status: 200,
    response: z.object({ method: z.literal('passkey') }),
    summary: 'Prove the second factor for this session with a passkey',
    tag: 'auth',
  }),
  sessions: defineRoute({
    method: 'GET',
    path: '/api/auth/sessions',
    auth: 'user',
    subject: 'auth.http.sessions.list',
    response: z.object({ sessions: z.array(sessionSummary) }),
    summary: "The user's active sessions",
    tag: 'auth',
  }),
  sessionRevoke: defineRoute({
    method: 'DELETE',
    path: '/api/auth/sessions/:id',
    auth: 'user',
    subject: 'auth.http.sessions.revoke',
    params: idParam,
    status: 204,
    response: z.null(),
    summary: 'Sign one session out',
    tag: 'auth',
  }),
  sessionsRevokeAll: defineRoute({
    method: 'DELETE',
    path: '/api/auth/sessions',
    auth: 'user',
    subject: 'auth.http.sessions.revoke-all',
    response: z.object({ revoked: z.number().int() }),
    summary: 'Sign out everywhere (this session included)',
    tag: 'auth',
  }),
  apiKeys: defineRoute({
    method: 'GET',
    path: '/api/user/api-keys',
    auth: 'user',
    subject: 'auth.http.api-keys.list',
    response: z.object({ keys: z.array(apiKeySummary) }),
    summary: 'API keys (never the key itself)',
    tag: 'auth',
  }),
  apiKeyCreate: defineRoute({
    method: 'POST',
    path: '/api/user/api-keys',
    auth: 'user',
    subject: 'auth.http.api-keys.create',
    body: z
      .object({
        name: z.string().trim().min(1, 'is required').max(100),
        readOnly: z.boolean().default(false),
        expiresAt: z.iso.datetime({ offset: true }).nullable().optional(),
      })
      .strict(),
    response: apiKeySummary.extend({ key: z.string() }),
    summary: 'Create an API key; the key is shown once (Authorization: Bearer ts_live_…)',
    tag: 'auth',
  }),
  apiKeyRevoke: defineRoute({
    method: 'DELETE',
    path: '/api/user/api-keys/:id',
    auth: 'user',
    subject: 'auth.http.api-keys.revoke',
    params: idParam,
    status: 204,
    response: z.null(),
    summary: 'Revoke an API key',
    tag: 'auth',
  }),
};

/** HTTP routes of the auth service (2FA, passkeys, sessions, API keys). */
export const authRoutes: AnyRoute[] = Object.values(authApi);
