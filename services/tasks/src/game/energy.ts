import type { HttpCall } from '@tasksvc/proto';
import type { PoolClient } from '@tasksvc/runtime';
import { inTransaction } from '@tasksvc/runtime';
import { transact, type Ctx } from '../handlers/common.ts';
import { addDays } from './domain/dates.ts';
import type { Energy } from './domain/quest.ts';
import { consecutiveDays } from './domain/streak.ts';
import { who } from './handlers.ts';
import { unlockAchievements } from './unlock.ts';

type Db = Pick<PoolClient, 'query'>;

async function checkinState(c: Db, userId: string, today: string) {
  const { rows } = await c.query<{ date: string; level: Energy }>(
    'SELECT local_date::text AS date, level FROM tasks.energy_checkins WHERE user_id = $1 AND local_date <= $2 ORDER BY local_date DESC LIMIT 31',
    [userId, today],
  );
  const since = addDays(today, -13);
  return {
    today: rows[0]?.date === today ? rows[0] : null,
    streak: consecutiveDays(rows.map((r) => r.date), today),
    recent: rows.filter((r) => r.date >= since),
  };
}

export async function getEnergyCheckin(ctx: Ctx, call: HttpCall<unknown, unknown, unknown>) {
  return inTransaction(ctx.pool, async (c) => {
    const u = await who(c, call);
    return checkinState(c, u.userId, u.today);
  });
}

/** One check-in per local day (the latest wins); it also becomes the energy today's quest selection matches. */
export async function energyCheckin(ctx: Ctx, call: HttpCall<unknown, unknown, { level: Energy }>) {
  return transact(ctx, async (c) => {
    const u = await who(c, call, true);
    await c.query(
      `INSERT INTO tasks.energy_checkins (user_id, local_date, level) VALUES ($1, $2, $3)
       ON CONFLICT (user_id, local_date) DO UPDATE SET level = EXCLUDED.level, created_at = now()`,
      [u.userId, u.today, call.body.level],
    );
    await c.query('UPDATE tasks.profiles SET energy_level = $2, updated_at = now() WHERE user_id = $1', [u.userId, call.body.level]);
    await unlockAchievements(c, u.userId, null);
    return checkinState(c, u.userId, u.today);
  });
}
