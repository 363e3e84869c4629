import { AppError } from '@tasksvc/proto';
import { inTransaction, orm, type Pool, type PoolClient, type Queryable } from '@tasksvc/runtime';
import { and, asc, count, eq, gt, isNotNull, isNull, lt, sql } from 'drizzle-orm';
import { authenticators, secondFactorAttempts, totpBackupCodes, totpCredentials, users, webauthnChallenges, type CHALLENGE_PURPOSES } from './schema.ts';

// ---- TOTP --------------------------------------------------------------------------------------

const totpColumns = { userId: totpCredentials.userId, secretEncrypted: totpCredentials.secretEncrypted, enabledAt: totpCredentials.enabledAt, lastTimeStep: totpCredentials.lastTimeStep };
export type TotpRow = Pick<typeof totpCredentials.$inferSelect, keyof typeof totpColumns>;

export async function totpFor(q: Queryable, userId: string, forUpdate = false): Promise<TotpRow | null> {
  const query = orm(q).select(totpColumns).from(totpCredentials).where(eq(totpCredentials.userId, userId));
  const [row] = forUpdate ? await query.for('update') : await query;
  return row ?? null;
}

/** Start (or restart) enrolment: a pending secret replaces any earlier pending one, never an enabled one. */
export async function upsertPendingTotp(q: Queryable, userId: string, secretEncrypted: string): Promise<boolean> {
  const r = await orm(q)
    .insert(totpCredentials)
    .values({ userId, secretEncrypted })
    .onConflictDoUpdate({
      target: totpCredentials.userId,
      set: { secretEncrypted: sql`excluded.secret_encrypted`, lastTimeStep: null, createdAt: sql`now()` },
      setWhere: isNull(totpCredentials.enabledAt),
    });
  return (r.rowCount ?? 0) > 0;
}

export async function enableTotp(q: Queryable, userId: string, timeStep: number): Promise<void> {
  await orm(q).update(totpCredentials).set({ enabledAt: sql`now()`, lastTimeStep: timeStep }).where(eq(totpCredentials.userId, userId));
}

export async function recordTotpStep(q: Queryable, userId: string, timeStep: number): Promise<void> {
  await orm(q).update(totpCredentials).set({ lastTimeStep: timeStep }).where(eq(totpCredentials.userId, userId));
}

export async function deleteTotp(q: Queryable, userId: string): Promise<void> {
  const db = orm(q);
  await db.delete(totpCredentials).where(eq(totpCredentials.userId, userId));
  await db.delete(totpBackupCodes).where(eq(totpBackupCodes.userId, userId));
}

export async function replaceBackupCodes(q: Queryable, userId: string, hashes: string[]): Promise<void> {
  const db = orm(q);
  await db.delete(totpBackupCodes).where(eq(totpBackupCodes.userId, userId));
  if (hashes.length > 0) await db.insert(totpBackupCodes).values(hashes.map((codeHash) => ({ userId, codeHash })));
}

/** Spend a backup code: true once per code. */
export async function useBackupCode(q: Queryable, userId: string, hash: string): Promise<boolean> {
  const r = await orm(q)
    .update(totpBackupCodes)
    .set({ usedAt: sql`now()` })
    .where(and(eq(totpBackupCodes.userId, userId), eq(totpBackupCodes.codeHash, hash), isNull(totpBackupCodes.usedAt)));
  return (r.rowCount ?? 0) > 0;
}

export async function backupCodesRemaining(q: Queryable, userId: string): Promise<number> {
  const [row] = await orm(q)
    .select({ n: count() })
    .from(totpBackupCodes)
    .where(and(eq(totpBackupCodes.userId, userId), isNull(totpBackupCodes.usedAt)));
  return row!.n;
}

/**
 * Whether TOTP is on and how many passkeys exist: the inputs of the second-factor rules. The enabled
 * TOTP's stored secret comes along so the handlers can tell whether TOTP_ENCRYPTION_KEY still opens it
 * (handlers/context.ts readableFactors); it never leaves the auth service.
 */
export async function factorSummary(q: Queryable, userId: string): Promise<{ totpEnabled: boolean; passkeys: number; totpSecretEncrypted: string | null }> {
  const db = orm(q);
  const enabledTotp = and(eq(totpCredentials.userId, userId), isNotNull(totpCredentials.enabledAt));
  const [row] = await db
    .select({
      totpSecretEncrypted: sql<string | null>`(${db.select({ s: totpCredentials.secretEncrypted }).from(totpCredentials).where(enabledTotp)})`,
      passkeys: sql<number>`(${db.select({ n: count() }).from(authenticators).where(eq(authenticators.userId, userId))})::int`,
    })
    .from(sql`(SELECT 1) AS one`);
  return { totpEnabled: row!.totpSecretEncrypted !== null, passkeys: row!.passkeys, totpSecretEncrypted: row!.totpSecretEncrypted };
}

/** Serialise factor changes of one user (so two concurrent removals cannot both pass the last-factor rule). */
export async function lockUserFactors(q: PoolClient, userId: string): Promise<void> {
  await orm(q).select({ id: users.id }).from(users).where(eq(users.id, userId)).for('update');
}

// ---- Passkeys ----------------------------------------------------------------------------------

const authenticatorColumns = {
  id: authenticators.id,
  userId: authenticators.userId,
  credentialId: authenticators.credentialId,
  publicKey: authenticators.publicKey,
  counter: authenticators.counter,
  transports: authenticators.transports,
  backedUp: authenticators.backedUp,
  name: authenticators.name,
  createdAt: authenticators.createdAt,
  lastUsedAt: authenticators.lastUsedAt,
};
export type AuthenticatorRow = Pick<typeof authenticators.$inferSelect, keyof typeof authenticatorColumns>;
const ownAuthenticator = (id: string, userId: string) => and(eq(authenticators.id, id), eq(authenticators.userId, userId));

export async function listAuthenticators(q: Queryable, userId: string): Promise<AuthenticatorRow[]> {
  return orm(q).select(authenticatorColumns).from(authenticators).where(eq(authenticators.userId, userId)).orderBy(asc(authenticators.createdAt));
}

export async function authenticatorByCredentialId(q: Queryable, credentialId: string): Promise<AuthenticatorRow | null> {
  const [row] = await orm(q).select(authenticatorColumns).from(authenticators).where(eq(authenticators.credentialId, credentialId));
  return row ?? null;
}

export async function insertAuthenticator(
  q: Queryable,
  a: { userId: string; credentialId: string; publicKey: Uint8Array; counter: number; transports: string[]; deviceType: string; backedUp: boolean; name: string },
): Promise<AuthenticatorRow> {
  const [row] = await orm(q)
    .insert(authenticators)
    .values({ ...a, publicKey: Buffer.from(a.publicKey) })
    .returning(authenticatorColumns);
  return row!;
}

export async function recordAuthenticatorUse(q: Queryable, id: string, counter: number): Promise<void> {
  await orm(q).update(authenticators).set({ counter, lastUsedAt: sql`now()` }).where(eq(authenticators.id, id));
}

export async function deleteAuthenticator(q: Queryable, id: string, userId: string): Promise<boolean> {
  const r = await orm(q).delete(authenticators).where(ownAuthenticator(id, userId));
  return (r.rowCount ?? 0) > 0;
}

export async function authenticatorExists(q: Queryable, id: string, userId: string): Promise<boolean> {
  return (await orm(q).select({ id: authenticators.id }).from(authenticators).where(ownAuthenticator(id, userId))).length > 0;
}

// ---- WebAuthn challenges -------------------------------------------------------------------------

export type ChallengePurpose = (typeof CHALLENGE_PURPOSES)[number];

/** Live anonymous challenges (sign-in, sign-up) one client key may hold; more are refused (429) until one is used or expires. */
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
    const db = orm(tx);
    const clientKey = c.clientKey ?? 'unknown';
    // Expired challenges are dropped as new ones are made: the table stays small without a sweeper.
    await db.delete(webauthnChallenges).where(lt(webauthnChallenges.expiresAt, sql`now()`));
    if (c.userId === null) {
      // Anonymous requests cannot grow the table: a client key holds a few live challenges at most.
      // A full key is refused rather than its oldest dropped: people behind one address (an office,
      // a proxy) share the key, and a flood must not cancel someone else's pending sign-in (#56.5).
      // The lock serialises one key's inserts so the bound is exact under concurrency.
      await db.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended('auth.webauthn_challenges:' || ${clientKey}, 0))`);
      const [live] = await db
        .select({
          n: count(),
          // a slot frees when the oldest of them expires (expired ones were deleted above): the wait, in whole seconds
          freeIn: sql<number>`greatest(1, ceil(extract(epoch from min(${webauthnChallenges.expiresAt}) - now())))::int`,
        })
        .from(webauthnChallenges)
        .where(and(isNull(webauthnChallenges.userId), eq(webauthnChallenges.clientKey, clientKey)));
      if (live!.n >= ANONYMOUS_CHALLENGES_PER_CLIENT) {
        const wait = live!.freeIn;
        throw new AppError('RATE_LIMITED', `${ANONYMOUS_CHALLENGES_PER_CLIENT} passkey sign-ins are already pending from this address: finish one, or try again in ${wait} s`, undefined, { retryAfterSeconds: wait });
      }
    }
    const [row] = await db
      .insert(webauthnChallenges)
      .values({
        purpose: c.purpose,
        userId: c.userId,
        challenge: c.challenge,
        expiresAt: sql`now() + make_interval(secs => ${c.ttlSeconds})`,
        clientKey: c.userId === null ? clientKey : null,
        signupUserId: c.signup?.userId ?? null,
        signupName: c.signup?.name ?? null,
      })
      .returning({ id: webauthnChallenges.id });
    return row!.id;
  });
}

export interface TakenChallenge {
  challenge: string;
  signupUserId: string | null;
  signupName: string | null;
}

/** Take a challenge (once): it must be live, of this purpose and, when given, this user's. */
export async function takeChallenge(q: Queryable, id: string, purpose: ChallengePurpose, userId: string | null): Promise<TakenChallenge | null> {
  const [row] = await orm(q)
    .delete(webauthnChallenges)
    .where(
      and(
        eq(webauthnChallenges.id, id),
        eq(webauthnChallenges.purpose, purpose),
        sql`${webauthnChallenges.userId} IS NOT DISTINCT FROM ${userId}::uuid`,
        gt(webauthnChallenges.expiresAt, sql`now()`),
      ),
    )
    .returning({ challenge: webauthnChallenges.challenge, signupUserId: webauthnChallenges.signupUserId, signupName: webauthnChallenges.signupName });
  return row ?? null;
}

// ---- Failed codes (brute-force limit) --------------------------------------------------------------

/**
 * Reserve one code check before the code is looked at, in one atomic statement: the user's counter
 * starts a new window when the old one is over, and otherwise goes up by one. Returns this attempt's
 * number in the window; concurrent requests serialise on the counter row for that one statement, so
 * each gets its own number and the limit (domain/second-factor.ts) holds however many arrive at once.
 * A correct code clears the counter.
 */
export async function reserveAttempt(q: Queryable, userId: string, windowMinutes: number): Promise<number> {
  const a = secondFactorAttempts;
  const over = sql`${a.windowStart} <= now() - make_interval(mins => ${windowMinutes})`;
  const [row] = await orm(q)
    .insert(a)
    .values({ userId, windowStart: sql`now()`, attempts: 1 })
    .onConflictDoUpdate({
      target: a.userId,
      set: { windowStart: sql`CASE WHEN ${over} THEN now() ELSE ${a.windowStart} END`, attempts: sql`CASE WHEN ${over} THEN 1 ELSE ${a.attempts} + 1 END` },
    })
    .returning({ attempts: a.attempts });
  return row!.attempts;
}

export async function clearFailures(q: Queryable, userId: string): Promise<void> {
  await orm(q).delete(secondFactorAttempts).where(eq(secondFactorAttempts.userId, userId));
}
