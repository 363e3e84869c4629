import type { Pool, PoolClient } from '@tasksvc/runtime';

export interface UserRow {
  id: string;
  email: string | null;
  name: string | null;
  image: string | null;
  email_verified: Date | null;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (v: string): boolean => UUID_RE.test(v);

const USER_COLS = 'id, email, name, image, email_verified';

export async function insertUser(
  pool: Pool | PoolClient,
  u: { id?: string; email: string | null; name: string | null; image: string | null; emailVerified: Date | null },
): Promise<UserRow> {
  const { rows } = await pool.query<UserRow>(
    `INSERT INTO auth.users (id, email, name, image, email_verified) VALUES (COALESCE($1, gen_random_uuid()), $2, $3, $4, $5) RETURNING ${USER_COLS}`,
    [u.id ?? null, u.email, u.name, u.image, u.emailVerified],
  );
  return rows[0]!;
}

export async function userById(pool: Pool, id: string): Promise<UserRow | null> {
  if (!isUuid(id)) return null;
  const { rows } = await pool.query<UserRow>(`SELECT ${USER_COLS} FROM auth.users WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

/** Auth.js asks this to refuse silent linking: an existing user with the address blocks a new account. */
export async function userByEmail(pool: Pool, email: string): Promise<UserRow | null> {
  const { rows } = await pool.query<UserRow>(`SELECT ${USER_COLS} FROM auth.users WHERE lower(email) = lower($1) ORDER BY created_at LIMIT 1`, [email]);
  return rows[0] ?? null;
}

export async function userByAccount(pool: Pool, provider: string, providerAccountId: string): Promise<UserRow | null> {
  const { rows } = await pool.query<UserRow>(
    `SELECT u.id, u.email, u.name, u.image, u.email_verified FROM auth.accounts a JOIN auth.users u ON u.id = a.user_id
      WHERE a.provider = $1 AND a.provider_account_id = $2`,
    [provider, providerAccountId],
  );
  return rows[0] ?? null;
}

export async function updateUser(pool: Pool, id: string, u: { email?: string | null; name?: string | null; image?: string | null; emailVerified?: Date | null }): Promise<UserRow> {
  const { rows } = await pool.query<UserRow>(
    `UPDATE auth.users SET
       email = CASE WHEN $2::boolean THEN $3 ELSE email END,
       name = CASE WHEN $4::boolean THEN $5 ELSE name END,
       image = CASE WHEN $6::boolean THEN $7 ELSE image END,
       email_verified = CASE WHEN $8::boolean THEN $9::timestamptz ELSE email_verified END
     WHERE id = $1 RETURNING ${USER_COLS}`,
    [id, u.email !== undefined, u.email ?? null, u.name !== undefined, u.name ?? null, u.image !== undefined, u.image ?? null, u.emailVerified !== undefined, u.emailVerified ?? null],
  );
  if (!rows[0]) throw new Error(`user ${id} not found`);
  return rows[0];
}

/** What Auth.js hands over when it links a provider account (the tokens in it are never stored). */
export interface AccountInput {
  userId: string;
  type: string;
  provider: string;
  providerAccountId: string;
}

/**
 * Link a provider account. Only the link is kept: the provider's access, refresh and ID tokens are
 * never used after sign-in, so they are not stored at all (migration 0005 cleared the old ones and
 * forbids them).
 */
export async function insertAccount(pool: Pool, a: AccountInput): Promise<void> {
  await pool.query(`INSERT INTO auth.accounts (user_id, type, provider, provider_account_id) VALUES ($1, $2, $3, $4)`, [a.userId, a.type, a.provider, a.providerAccountId]);
}

/** Record activity at most every five minutes per user (for the admin's active-user counts). */
export async function touchUser(pool: Pool | PoolClient, id: string): Promise<void> {
  await pool.query(`UPDATE auth.users SET last_active_at = now() WHERE id = $1 AND (last_active_at IS NULL OR last_active_at < now() - interval '5 minutes')`, [id]);
}
