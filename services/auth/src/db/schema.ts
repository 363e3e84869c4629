import { sql } from 'drizzle-orm';
import { bigint, boolean, check, foreignKey, index, integer, pgSchema, text, timestamp, unique, uuid } from 'drizzle-orm/pg-core';
import { bytea, oneOf } from '@tasksvc/runtime/db/columns.ts';

/**
 * The auth service's tables (schema `auth`), declared once: row and insert types are inferred from
 * here, and migrations are generated from it (docs/architecture.md, Data layer).
 *
 * `users` and `api_keys` are also written from outside (acceptance tests seed them: `ts_live_…` keys
 * stored as SHA-256 hex in key_hash): their names, columns and storage are part of the contract.
 */
export const auth = pgSchema('auth');

const created = () => timestamp({ withTimezone: true }).notNull().defaultNow();

export const users = auth.table(
  'users',
  {
    id: uuid().primaryKey().defaultRandom(),
    email: text(),
    name: text(),
    image: text(),
    emailVerified: timestamp({ withTimezone: true }),
    createdAt: created(),
    lastActiveAt: timestamp({ withTimezone: true }),
  },
  // not unique: the same address at two providers is two users until the user links them explicitly
  () => [index('users_email').using('btree', sql`lower(email)`)],
);

const owner = () => uuid().notNull();
const ownedBy = (name: string, userId: Parameters<typeof foreignKey>[0]['columns'][0]) => foreignKey({ name, columns: [userId], foreignColumns: [users.id] }).onDelete('cascade');

/** Linked provider accounts; the provider's tokens are never stored (0005_no_provider_tokens). */
export const accounts = auth.table(
  'accounts',
  {
    id: uuid().primaryKey().defaultRandom(),
    userId: owner(),
    type: text().notNull(),
    provider: text().notNull(),
    providerAccountId: text().notNull(),
    refreshToken: text(),
    accessToken: text(),
    expiresAt: bigint({ mode: 'number' }),
    tokenType: text(),
    scope: text(),
    idToken: text(),
    sessionState: text(),
    createdAt: created(),
  },
  (t) => [
    ownedBy('accounts_user_id_fkey', t.userId),
    unique('accounts_provider_provider_account_id_key').on(t.provider, t.providerAccountId),
    index('accounts_user').on(t.userId),
    check('accounts_no_provider_tokens', sql`access_token IS NULL AND refresh_token IS NULL AND id_token IS NULL AND session_state IS NULL`),
  ],
);

/**
 * The cookie carries a random token; only HMAC-SHA256(AUTH_SECRET, token) is stored, so a changed
 * AUTH_SECRET matches no row and a stolen table yields no usable cookie.
 */
export const sessions = auth.table(
  'sessions',
  {
    id: uuid().primaryKey().defaultRandom(),
    tokenHash: text().notNull(),
    userId: owner(),
    expires: timestamp({ withTimezone: true }).notNull(),
    createdAt: created(),
    lastActiveAt: created(),
    secondFactorVerifiedAt: timestamp({ withTimezone: true }),
    userAgent: text(),
    ip: text(),
  },
  // sessions_expires: the purge of expired sessions at every sign-in (#56.13) and the live-session reads
  (t) => [ownedBy('sessions_user_id_fkey', t.userId), unique('sessions_token_hash_key').on(t.tokenHash), index('sessions_user').on(t.userId), index('sessions_expires').on(t.expires)],
);

export const apiKeys = auth.table(
  'api_keys',
  {
    id: uuid().primaryKey().defaultRandom(),
    userId: owner(),
    name: text().notNull(),
    /** first characters of the key, shown in lists so a user can tell keys apart */
    displayPrefix: text().notNull(),
    /** SHA-256 (hex) of the key */
    keyHash: text().notNull(),
    readOnly: boolean().notNull().default(false),
    expiresAt: timestamp({ withTimezone: true }),
    createdAt: created(),
    lastUsedAt: timestamp({ withTimezone: true }),
  },
  (t) => [ownedBy('api_keys_user_id_fkey', t.userId), unique('api_keys_key_hash_key').on(t.keyHash), index('api_keys_user').on(t.userId)],
);

/** One TOTP secret per user (AES-256-GCM); enabled_at null while enrolment is unconfirmed; last_time_step refuses a replayed code. */
export const totpCredentials = auth.table(
  'totp_credentials',
  {
    userId: uuid().primaryKey(),
    secretEncrypted: text().notNull(),
    enabledAt: timestamp({ withTimezone: true }),
    lastTimeStep: bigint({ mode: 'number' }),
    createdAt: created(),
  },
  (t) => [ownedBy('totp_credentials_user_id_fkey', t.userId)],
);

export const totpBackupCodes = auth.table(
  'totp_backup_codes',
  {
    id: uuid().primaryKey().defaultRandom(),
    userId: owner(),
    codeHash: text().notNull(),
    usedAt: timestamp({ withTimezone: true }),
    createdAt: created(),
  },
  (t) => [ownedBy('totp_backup_codes_user_id_fkey', t.userId), index('totp_backup_codes_user').on(t.userId)],
);

/** Passkeys. */
export const authenticators = auth.table(
  'authenticators',
  {
    id: uuid().primaryKey().defaultRandom(),
    userId: owner(),
    credentialId: text().notNull(),
    publicKey: bytea().notNull(),
    counter: bigint({ mode: 'number' }).notNull().default(0),
    transports: text().array().notNull().default(sql`'{}'::text[]`),
    deviceType: text(),
    backedUp: boolean().notNull().default(false),
    name: text().notNull(),
    createdAt: created(),
    lastUsedAt: timestamp({ withTimezone: true }),
  },
  (t) => [ownedBy('authenticators_user_id_fkey', t.userId), unique('authenticators_credential_id_key').on(t.credentialId), index('authenticators_user').on(t.userId)],
);

export const CHALLENGE_PURPOSES = ['register', 'login', 'second_factor', 'signup'] as const;

/**
 * WebAuthn challenges live in the database so any replica can finish a ceremony another started.
 * Anonymous ones (sign-in, sign-up) carry the client key that bounds how many one address holds; a
 * sign-up carries the id and name of the account it will create (which does not exist yet).
 */
export const webauthnChallenges = auth.table(
  'webauthn_challenges',
  {
    id: uuid().primaryKey().defaultRandom(),
    purpose: text({ enum: CHALLENGE_PURPOSES }).notNull(),
    userId: uuid(),
    challenge: text().notNull(),
    expiresAt: timestamp({ withTimezone: true }).notNull(),
    createdAt: created(),
    clientKey: text(),
    signupUserId: uuid(),
    signupName: text(),
  },
  (t) => [
    ownedBy('webauthn_challenges_user_id_fkey', t.userId),
    check('webauthn_challenges_purpose_check', oneOf('purpose', CHALLENGE_PURPOSES)),
    index('webauthn_challenges_anonymous').on(t.clientKey, t.createdAt).where(sql`user_id IS NULL`),
    index('webauthn_challenges_expiry').on(t.expiresAt),
  ],
);

/** Second-factor attempts as one counter row per user, reserved atomically before a code is checked (#19.1). */
export const secondFactorAttempts = auth.table(
  'second_factor_attempts',
  {
    userId: uuid().primaryKey(),
    windowStart: timestamp({ withTimezone: true }).notNull(),
    attempts: integer().notNull(),
  },
  (t) => [ownedBy('second_factor_attempts_user_id_fkey', t.userId)],
);
