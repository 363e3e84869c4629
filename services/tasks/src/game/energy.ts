import type { HttpCall } from '@tasksvc/proto';
import { inTransaction, type Queryable } from '@tasksvc/runtime';
import { checkIn, recentCheckins } from '../db/energy.ts';
import { updateProfile } from '../db/profiles.ts';
import { transact, type Ctx } from '../handlers/common.ts';
import { addDays } from './domain/dates.ts';
import type { Energy } from './domain/quest.ts';
import { consecutiveDays } from './domain/streak.ts';
import { who } from './handlers.ts';
import { unlockAchievements } from './unlock.ts';

async function checkinState(c: Queryable, userId: string, today: string) {
  const rows = await recentCheckins(c, userId, today);
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
    await checkIn(c, u.userId, u.today, call.body.level);
    await updateProfile(c, u.userId, { energyLevel: call.body.level });
    await unlockAchievements(c, u.userId, null);
    return checkinState(c, u.userId, u.today);
  });
}
