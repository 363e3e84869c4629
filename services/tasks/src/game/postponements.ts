import { AppError } from '@tasksvc/proto';
import type { Queryable } from '@tasksvc/runtime';
import { lockProfile } from '../db/profiles.ts';
import { postponesOn, recordPostponement } from '../db/quests.ts';
import { lockTaskDates, postponeDates } from '../db/tasks.ts';
import { addDays } from './domain/dates.ts';
import { canPostpone, postponedDates } from './domain/quest.ts';

export { postponesOn };

/** Where a postponement came from: only the quest's own can be restored through the quest. */
export type PostponeVia = 'quest' | 'task';

/**
 * Postpone one task to tomorrow (reference §4) against the user's one daily limit, whichever route
 * asks. The profile row lock serialises a user's postpones, so concurrent requests cannot slip past
 * the limit; the task row lock keeps the recorded previous dates exact for a restore.
 */
export async function postponeTask(c: Queryable, userId: string, today: string, taskId: string, via: PostponeVia): Promise<void> {
  const limit = (await lockProfile(c, userId)).postponeLimit;
  const task = await lockTaskDates(c, userId, taskId);
  if (!task) throw new AppError('TASKS_NOT_FOUND', 'task not found');
  if (task.completed) throw new AppError('CONFLICT', 'a completed task cannot be postponed');
  if (!canPostpone(await postponesOn(c, userId, today), limit)) throw new AppError('LIMIT_REACHED', `daily postpone limit of ${limit} reached`);
  const moved = postponedDates(task, addDays(today, 1));
  await recordPostponement(c, { userId, taskId, localDate: today, previousDueDate: task.type === 'RECURRING' ? task.nextDueDate : task.dueDate, previousSnoozedUntil: task.snoozedUntil, via });
  await postponeDates(c, userId, taskId, moved);
}
