import { type HttpCall, type VacationModeBody } from '@tasksvc/proto';
import { inTransaction } from '@tasksvc/runtime';
import { fieldError, type Ctx } from '../handlers/common.ts';
import { addDays } from './domain/dates.ts';
import { who } from './handlers.ts';

type Who = Awaited<ReturnType<typeof who>>;

function view(u: Who) {
  const v = u.streak.vacation;
  return {
    active: Boolean(v && v.start <= u.today && v.end >= u.today),
    startDate: u.game.vacation_start_date,
    endDate: u.game.vacation_end_date,
  };
}

export async function getVacationMode(ctx: Ctx, call: HttpCall<unknown, unknown, unknown>) {
  return view(await who(ctx.pool, call));
}

/**
 * Start a vacation today (until `endDate` inclusive, or until ended) or end it. Ending keeps the
 * past days on record, so a streak from before the vacation continues after it.
 */
export async function setVacationMode(ctx: Ctx, call: HttpCall<unknown, unknown, VacationModeBody>) {
  return inTransaction(ctx.pool, async (c) => {
    const u = await who(c, call, true);
    const b = call.body;
    const current = view(u);
    let start: string | null;
    let end: string | null;
    if (b.active) {
      if (b.endDate && b.endDate < u.today) throw fieldError('endDate', `must be today (${u.today}) or later`);
      start = current.active ? u.game.vacation_start_date ?? u.today : u.today;
      end = b.endDate ?? null;
    } else if (current.active) {
      const yesterday = addDays(u.today, -1);
      start = u.game.vacation_start_date;
      end = yesterday;
      // A vacation ended on its first day leaves nothing to remember.
      if (start === null || start > yesterday) start = end = null;
    } else {
      return current;
    }
    await c.query('UPDATE tasks.profiles SET vacation_start_date = $2, vacation_end_date = $3, updated_at = now() WHERE user_id = $1', [u.userId, start, end]);
    return view(await who(c, call));
  });
}
