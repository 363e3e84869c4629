import { type HttpCall, type VacationModeBody } from '@tasksvc/proto';
import { inTransaction } from '@tasksvc/runtime';
import { updateProfile } from '../db/profiles.ts';
import { fieldError, type Ctx } from '../handlers/common.ts';
import { addDays } from './domain/dates.ts';
import { who } from './handlers.ts';

type Who = Awaited<ReturnType<typeof who>>;

function view(u: Who) {
  const v = u.streak.vacation;
  return {
    active: Boolean(v && v.start <= u.today && v.end >= u.today),
    startDate: u.profile.vacationStartDate,
    endDate: u.profile.vacationEndDate,
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
      start = current.active ? u.profile.vacationStartDate ?? u.today : u.today;
      end = b.endDate ?? null;
    } else if (current.active) {
      const yesterday = addDays(u.today, -1);
      start = u.profile.vacationStartDate;
      end = yesterday;
      // A vacation ended on its first day leaves nothing to remember.
      if (start === null || start > yesterday) start = end = null;
    } else {
      return current;
    }
    await updateProfile(c, u.userId, { vacationStartDate: start, vacationEndDate: end });
    return view(await who(c, call));
  });
}
