import type { Pool } from '@tasksvc/runtime';

export interface ApiKeyRow {
  id: string;
  user_id: string;
  name: string;
  display_prefix: string;
  read_only: boolean;
  expires_at: Date | null;
  created_at: Date;
  last_used_at: Date | null;
}

const COLS = 'id, user_id, name, display_prefix, read_only, expires_at, created_at, last_used_at';

export async function insertApiKey(pool: Pool, k: { userId: string; name: string; displayPrefix: string; hash: string; readOnly: boolean; expiresAt: Date | null }): Promise<ApiKeyRow> {
  const { rows } = await pool.query<ApiKeyRow>(
    `INSERT INTO auth.api_keys (user_id, name, display_prefix, key_hash, read_only, expires_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${COLS}`,
    [k.userId, k.name, k.displayPrefix, k.hash, k.readOnly, k.expiresAt],
  );
  return rows[0]!;
}

export async function listApiKeys(pool: Pool, userId: string): Promise<ApiKeyRow[]> {
  const { rows } = await pool.query<ApiKeyRow>(`SELECT ${COLS} FROM auth.api_keys WHERE user_id = $1 ORDER BY created_at DESC`, [userId]);
  return rows;
}

export async function deleteApiKey(pool: Pool, id: string, userId: string): Promise<boolean> {
  const r = await pool.query(`DELETE FROM auth.api_keys WHERE id = $1 AND user_id = $2`, [id, userId]);
  return (r.rowCount ?? 0) > 0;
}

/** A live (unexpired) key by its hash, with its owner's email. The hash is the unique key: equality in SQL leaks nothing useful. */
export async function apiKeyByHash(pool: Pool, hash: string): Promise<(ApiKeyRow & { email: string | null; user_last_active_at: Date | null }) | null> {
  const { rows } = await pool.query<ApiKeyRow & { email: string | null; user_last_active_at: Date | null }>(
    `SELECT k.id, k.user_id, k.name, k.display_prefix, k.read_only, k.expires_at, k.created_at, k.last_used_at, u.email, u.last_active_at AS user_last_active_at
       FROM auth.api_keys k JOIN auth.users u ON u.id = k.user_id
      WHERE k.key_hash = $1 AND (k.expires_at IS NULL OR k.expires_at > now())`,
    [hash],
  );
  return rows[0] ?? null;
}

export async function touchApiKey(pool: Pool, id: string): Promise<void> {
  await pool.query(`UPDATE auth.api_keys SET last_used_at = now() WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`, [id]);
}
