import type { Pool, PoolClient } from '@tasksvc/runtime';
import type { UserRow } from './users.ts';

export interface SessionRow {
  id: string;
  user_id: string;
  expires: Date;
  created_at: Date;
  last_active_at: Date;
  second_factor_verified_at: Date | null;
  user_agent: string | null;
  ip: string | null;
}

const COLS = 'id, user_id, expires, created_at, last_active_at, second_factor_verified_at, user_agent, ip';

export async function insertSession(
  pool: Pool | PoolClient,
  s: { tokenHash: string; userId: string; expires: Date; ip?: string | null | undefined; userAgent?: string | null | undefined; secondFactorVerified?: boolean },
): Promise<SessionRow> {
  const { rows } = await pool.query<SessionRow>(
    `INSERT INTO auth.sessions (token_hash, user_id, expires, ip, user_agent, second_factor_verified_at)
     VALUES ($1, $2, $3, $4, $5, CASE WHEN $6::boolean THEN now() END) RETURNING ${COLS}`,
    [s.tokenHash, s.userId, s.expires, s.ip ?? null, s.userAgent ? s.userAgent.slice(0, 512) : null, s.secondFactorVerified ?? false],
  );
  return rows[0]!;
}

/** The live session for a token hash, with its user; expired sessions are not returned. */
export async function sessionAndUser(pool: Pool, tokenHash: string): Promise<{ session: SessionRow; user: UserRow; userLastActiveAt: Date | null } | null> {
  const { rows } = await pool.query<SessionRow & { u_email: string | null; u_name: string | null; u_image: string | null; u_email_verified: Date | null; u_last_active_at: Date | null }>(
    `SELECT s.id, s.user_id, s.expires, s.created_at, s.last_active_at, s.second_factor_verified_at, s.user_agent, s.ip,
            u.email AS u_email, u.name AS u_name, u.image AS u_image, u.email_verified AS u_email_verified, u.last_active_at AS u_last_active_at
       FROM auth.sessions s JOIN auth.users u ON u.id = s.user_id
      WHERE s.token_hash = $1 AND s.expires > now()`,
    [tokenHash],
  );
  const r = rows[0];
  if (!r) return null;
  const { u_email, u_name, u_image, u_email_verified, u_last_active_at, ...session } = r;
  return { session, user: { id: r.user_id, email: u_email, name: u_name, image: u_image, email_verified: u_email_verified }, userLastActiveAt: u_last_active_at };
}

export async function updateSessionExpiry(pool: Pool, tokenHash: string, expires: Date): Promise<SessionRow | null> {
  const { rows } = await pool.query<SessionRow>(`UPDATE auth.sessions SET expires = $2 WHERE token_hash = $1 RETURNING ${COLS}`, [tokenHash, expires]);
  return rows[0] ?? null;
}

export async function deleteSessionByHash(pool: Pool, tokenHash: string): Promise<SessionRow | null> {
  const { rows } = await pool.query<SessionRow>(`DELETE FROM auth.sessions WHERE token_hash = $1 RETURNING ${COLS}`, [tokenHash]);
  return rows[0] ?? null;
}

/** Throttled: at most one write per session per minute. */
export async function touchSession(pool: Pool, id: string): Promise<void> {
  await pool.query(`UPDATE auth.sessions SET last_active_at = now() WHERE id = $1 AND last_active_at < now() - interval '1 minute'`, [id]);
}

export async function markSecondFactorVerified(pool: Pool | PoolClient, sessionId: string, userId: string): Promise<void> {
  await pool.query(`UPDATE auth.sessions SET second_factor_verified_at = now() WHERE id = $1 AND user_id = $2`, [sessionId, userId]);
}

export async function sessionById(pool: Pool, id: string, userId: string): Promise<SessionRow | null> {
  const { rows } = await pool.query<SessionRow>(`SELECT ${COLS} FROM auth.sessions WHERE id = $1 AND user_id = $2 AND expires > now()`, [id, userId]);
  return rows[0] ?? null;
}

export async function listSessions(pool: Pool, userId: string): Promise<SessionRow[]> {
  const { rows } = await pool.query<SessionRow>(`SELECT ${COLS} FROM auth.sessions WHERE user_id = $1 AND expires > now() ORDER BY last_active_at DESC, created_at DESC`, [userId]);
  return rows;
}

export async function deleteSession(pool: Pool, id: string, userId: string): Promise<boolean> {
  const r = await pool.query(`DELETE FROM auth.sessions WHERE id = $1 AND user_id = $2`, [id, userId]);
  return (r.rowCount ?? 0) > 0;
}

export async function deleteAllSessions(pool: Pool, userId: string): Promise<number> {
  const r = await pool.query(`DELETE FROM auth.sessions WHERE user_id = $1`, [userId]);
  return r.rowCount ?? 0;
}
