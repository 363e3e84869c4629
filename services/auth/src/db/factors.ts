import { inTransaction, type Pool, type PoolClient } from '@tasksvc/runtime';

type Db = Pool | PoolClient;

// ---- TOTP --------------------------------------------------------------------------------------

export interface TotpRow {
  user_id: string;
  secret_encrypted: string;
  enabled_at: Date | null;
  last_time_step: string | null;
}

export async function totpFor(db: Db, userId: string, forUpdate = false): Promise<TotpRow | null> {
  const { rows } = await db.query<TotpRow>(
    `SELECT user_id, secret_encrypted, enabled_at, last_time_step FROM auth.totp_credentials WHERE user_id = $1${forUpdate ? ' FOR UPDATE' : ''}`,
    [userId],
  );
  return rows[0] ?? null;
}

/** Start (or restart) enrolment: a pending secret replaces any earlier pending one, never an enabled one. */
export async function upsertPendingTotp(db: Db, userId: string, secretEncrypted: string): Promise<boolean> {
  const r = await db.query(
    `INSERT INTO auth.totp_credentials (user_id, secret_encrypted) VALUES ($1, $2)
     ON CONFLICT (user_id) DO UPDATE SET secret_encrypted = EXCLUDED.secret_encrypted, last_time_step = NULL, created_at = now()
       WHERE auth.totp_credentials.enabled_at IS NULL`,
    [userId, secretEncrypted],
  );
  return (r.rowCount ?? 0) > 0;
}

export async function enableTotp(db: Db, userId: string, timeStep: number): Promise<void> {
  await db.query(`UPDATE auth.totp_credentials SET enabled_at = now(), last_time_step = $2 WHERE user_id = $1`, [userId, timeStep]);
}

export async function recordTotpStep(db: Db, userId: string, timeStep: number): Promise<void> {
  await db.query(`UPDATE auth.totp_credentials SET last_time_step = $2 WHERE user_id = $1`, [userId, timeStep]);
}

export async function deleteTotp(db: Db, userId: string): Promise<void> {
  await db.query(`DELETE FROM auth.totp_credentials WHERE user_id = $1`, [userId]);
  await db.query(`DELETE FROM auth.totp_backup_codes WHERE user_id = $1`, [userId]);
}

export async function replaceBackupCodes(db: Db, userId: string, hashes: string[]): Promise<void> {
  await db.query(`DELETE FROM auth.totp_backup_codes WHERE user_id = $1`, [userId]);
  await db.query(`INSERT INTO auth.totp_backup_codes (user_id, code_hash) SELECT $1, unnest($2::text[])`, [userId, hashes]);
}

/** Spend a backup code: true once per code. */
export async function useBackupCode(db: Db, userId: string, hash: string): Promise<boolean> {
  const r = await db.query(`UPDATE auth.totp_backup_codes SET used_at = now() WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL`, [userId, hash]);
  return (r.rowCount ?? 0) > 0;
}

export async function backupCodesRemaining(db: Db, userId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM auth.totp_backup_codes WHERE user_id = $1 AND used_at IS NULL`, [userId]);
  return rows[0]!.n;
}

/** Whether TOTP is on and how many passkeys exist: the inputs of the second-factor rules. */
export async function factorSummary(db: Db, userId: string): Promise<{ totpEnabled: boolean; passkeys: number }> {
  const { rows } = await db.query<{ totp: boolean; passkeys: number }>(
    `SELECT EXISTS (SELECT 1 FROM auth.totp_credentials WHERE user_id = $1 AND enabled_at IS NOT NULL) AS totp,
            (SELECT count(*)::int FROM auth.authenticators WHERE user_id = $1) AS passkeys`,
    [userId],
  );
  return { totpEnabled: rows[0]!.totp, passkeys: rows[0]!.passkeys };
}

/** Serialise factor changes of one user (so two concurrent removals cannot both pass the last-factor rule). */
export async function lockUserFactors(db: PoolClient, userId: string): Promise<void> {
  await db.query(`SELECT id FROM auth.users WHERE id = $1 FOR UPDATE`, [userId]);
}

// ---- Passkeys ----------------------------------------------------------------------------------

export interface AuthenticatorRow {
  id: string;
  user_id: string;
  credential_id: string;
  public_key: Buffer;
  counter: string;
  transports: string[];
  backed_up: boolean;
  name: string;
  created_at: Date;
  last_used_at: Date | null;
}

const AUTH_COLS = 'id, user_id, credential_id, public_key, counter, transports, backed_up, name, created_at, last_used_at';

export async function listAuthenticators(db: Db, userId: string): Promise<AuthenticatorRow[]> {
  const { rows } = await db.query<AuthenticatorRow>(`SELECT ${AUTH_COLS} FROM auth.authenticators WHERE user_id = $1 ORDER BY created_at`, [userId]);
  return rows;
}

export async function authenticatorByCredentialId(db: Db, credentialId: string): Promise<AuthenticatorRow | null> {
  const { rows } = await db.query<AuthenticatorRow>(`SELECT ${AUTH_COLS} FROM auth.authenticators WHERE credential_id = $1`, [credentialId]);
  return rows[0] ?? null;
}

export async function insertAuthenticator(
  db: Db,
  a: { userId: string; credentialId: string; publicKey: Uint8Array; counter: number; transports: string[]; deviceType: string; backedUp: boolean; name: string },
): Promise<AuthenticatorRow> {
  const { rows } = await db.query<AuthenticatorRow>(
    `INSERT INTO auth.authenticators (user_id, credential_id, public_key, counter, transports, device_type, backed_up, name)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${AUTH_COLS}`,
    [a.userId, a.credentialId, Buffer.from(a.publicKey), a.counter, a.transports, a.deviceType, a.backedUp, a.name],
  );
  return rows[0]!;
}

export async function recordAuthenticatorUse(db: Db, id: string, counter: number): Promise<void> {
  await db.query(`UPDATE auth.authenticators SET counter = $2, last_used_at = now() WHERE id = $1`, [id, counter]);
}

export async function deleteAuthenticator(db: Db, id: string, userId: string): Promise<boolean> {
  const r = await db.query(`DELETE FROM auth.authenticators WHERE id = $1 AND user_id = $2`, [id, userId]);
  return (r.rowCount ?? 0) > 0;
}

export async function authenticatorExists(db: Db, id: string, userId: string): Promise<boolean> {
  const { rows } = await db.query(`SELECT 1 FROM auth.authenticators WHERE id = $1 AND user_id = $2`, [id, userId]);
  return rows.length > 0;
}

// ---- WebAuthn challenges -------------------------------------------------------------------------

export type ChallengePurpose = 'register' | 'login' | 'second_factor' | 'signup';

/** Live anonymous challenges (sign-in, sign-up) one client key may hold; older ones are dropped. */
export const ANONYMOUS_CHALLENGES_PER_CLIENT = 10;

export interface NewChallenge {
  purpose: ChallengePurpose;
  /** the signed-in user; null for the anonymous ceremonies */
  userId: string | null;
  challenge: string;
  ttlSeconds: number;
  /** anonymous ceremonies: the client key (domain/client-key.ts) that bounds them */
  clientKey?: string;
  /** sign-up: the id and name of the account the ceremony creates */
  signup?: { userId: string; name: string };
}

export async function insertChallenge(pool: Pool, c: NewChallenge): Promise<string> {
  return inTransaction(pool, async (tx) => {
    // Expired challenges are dropped as new ones are made: the table stays small without a sweeper.
    await tx.query(`DELETE FROM auth.webauthn_challenges WHERE expires_at < now()`);
    if (c.userId === null) {
      // Anonymous requests cannot grow the table: each client key keeps its newest few challenges.
      // The lock serialises one key's inserts so the bound is exact under concurrency.
      await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended('auth.webauthn_challenges:' || $1, 0))`, [c.clientKey ?? 'unknown']);
      await tx.query(
        `DELETE FROM auth.webauthn_challenges WHERE id IN (
           SELECT id FROM auth.webauthn_challenges WHERE user_id IS NULL AND client_key = $1 ORDER BY created_at DESC, id OFFSET $2)`,
        [c.clientKey ?? 'unknown', ANONYMOUS_CHALLENGES_PER_CLIENT - 1],
      );
    }
    const { rows } = await tx.query<{ id: string }>(
      `INSERT INTO auth.webauthn_challenges (purpose, user_id, challenge, expires_at, client_key, signup_user_id, signup_name)
       VALUES ($1, $2, $3, now() + make_interval(secs => $4), $5, $6, $7) RETURNING id`,
      [c.purpose, c.userId, c.challenge, c.ttlSeconds, c.userId === null ? (c.clientKey ?? 'unknown') : null, c.signup?.userId ?? null, c.signup?.name ?? null],
    );
    return rows[0]!.id;
  });
}

export interface TakenChallenge {
  challenge: string;
  signup_user_id: string | null;
  signup_name: string | null;
}

/** Take a challenge (once): it must be live, of this purpose and, when given, this user's. */
export async function takeChallenge(db: Db, id: string, purpose: ChallengePurpose, userId: string | null): Promise<TakenChallenge | null> {
  const { rows } = await db.query<TakenChallenge>(
    `DELETE FROM auth.webauthn_challenges WHERE id = $1 AND purpose = $2 AND user_id IS NOT DISTINCT FROM $3 AND expires_at > now()
     RETURNING challenge, signup_user_id, signup_name`,
    [id, purpose, userId],
  );
  return rows[0] ?? null;
}

// ---- Failed codes (brute-force limit) --------------------------------------------------------------

/**
 * Reserve one code check before the code is looked at, in one atomic statement: the user's counter
 * starts a new window when the old one is over, and otherwise goes up by one. Returns this attempt's
 * number in the window; concurrent requests serialise on the counter row for that one statement, so
 * each gets its own number and the limit (domain/second-factor.ts) holds however many arrive at once.
 * A correct code clears the counter.
 */
export async function reserveAttempt(db: Db, userId: string, windowMinutes: number): Promise<number> {
  const { rows } = await db.query<{ attempts: number }>(
    `INSERT INTO auth.second_factor_attempts AS a (user_id, window_start, attempts) VALUES ($1, now(), 1)
     ON CONFLICT (user_id) DO UPDATE SET
       window_start = CASE WHEN a.window_start <= now() - make_interval(mins => $2) THEN now() ELSE a.window_start END,
       attempts = CASE WHEN a.window_start <= now() - make_interval(mins => $2) THEN 1 ELSE a.attempts + 1 END
     RETURNING attempts`,
    [userId, windowMinutes],
  );
  return rows[0]!.attempts;
}

export async function clearFailures(db: Db, userId: string): Promise<void> {
  await db.query(`DELETE FROM auth.second_factor_attempts WHERE user_id = $1`, [userId]);
}
