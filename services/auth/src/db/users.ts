import type { Pool } from '@tasksvc/runtime';

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

export async function insertUser(pool: Pool, u: { email: string | null; name: string | null; image: string | null; emailVerified: Date | null }): Promise<UserRow> {
  const { rows } = await pool.query<UserRow>(
    `INSERT INTO auth.users (email, name, image, email_verified) VALUES ($1, $2, $3, $4) RETURNING ${USER_COLS}`,
    [u.email, u.name, u.image, u.emailVerified],
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

export interface AccountInput {
  userId: string;
  type: string;
  provider: string;
  providerAccountId: string;
  refresh_token?: string | undefined;
  access_token?: string | undefined;
  expires_at?: number | undefined;
  token_type?: string | undefined;
  scope?: string | undefined;
  id_token?: string | undefined;
  session_state?: unknown;
}

export async function insertAccount(pool: Pool, a: AccountInput): Promise<void> {
  await pool.query(
    `INSERT INTO auth.accounts (user_id, type, provider, provider_account_id, refresh_token, access_token, expires_at, token_type, scope, id_token, session_state)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
    [
      a.userId,
      a.type,
      a.provider,
      a.providerAccountId,
      a.refresh_token ?? null,
      a.access_token ?? null,
      a.expires_at ?? null,
      a.token_type ?? null,
      a.scope ?? null,
      a.id_token ?? null,
      typeof a.session_state === 'string' ? a.session_state : a.session_state == null ? null : JSON.stringify(a.session_state),
    ],
  );
}

/** Record activity at most every five minutes per user (for the admin's active-user counts). */
export async function touchUser(pool: Pool, id: string): Promise<void> {
  await pool.query(`UPDATE auth.users SET last_active_at = now() WHERE id = $1 AND (last_active_at IS NULL OR last_active_at < now() - interval '5 minutes')`, [id]);
}
