import type { Pool } from '@tasksvc/runtime';

export interface UserStats {
  total: number;
  new7d: number;
  new30d: number;
  active7d: number;
  active30d: number;
  byProvider: { provider: string; users: number }[];
  withSecondFactor: number;
}

/** Counts only; no row of any user leaves this function. */
export async function userStats(pool: Pool): Promise<UserStats> {
  const [totals, providers] = await Promise.all([
    pool.query<{ total: number; new7d: number; new30d: number; active7d: number; active30d: number; with2fa: number }>(
      `SELECT count(*)::int AS total,
              count(*) FILTER (WHERE created_at > now() - interval '7 days')::int AS new7d,
              count(*) FILTER (WHERE created_at > now() - interval '30 days')::int AS new30d,
              count(*) FILTER (WHERE last_active_at > now() - interval '7 days')::int AS active7d,
              count(*) FILTER (WHERE last_active_at > now() - interval '30 days')::int AS active30d,
              count(*) FILTER (WHERE EXISTS (SELECT 1 FROM auth.totp_credentials t WHERE t.user_id = u.id AND t.enabled_at IS NOT NULL)
                                  OR EXISTS (SELECT 1 FROM auth.authenticators a WHERE a.user_id = u.id))::int AS with2fa
         FROM auth.users u`,
    ),
    pool.query<{ provider: string; users: number }>(`SELECT provider, count(DISTINCT user_id)::int AS users FROM auth.accounts GROUP BY provider ORDER BY provider`),
  ]);
  const t = totals.rows[0]!;
  return { total: t.total, new7d: t.new7d, new30d: t.new30d, active7d: t.active7d, active30d: t.active30d, byProvider: providers.rows, withSecondFactor: t.with2fa };
}
