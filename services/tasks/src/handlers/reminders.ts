import { AppError, checkRemindersRpc, reminderActionsApi, type DueReminder, type HttpCall, type NotificationAction, type ReminderVerdict } from '@tasksvc/proto';
import { localDate } from '@tasksvc/proto/calendar/dates.ts';
import { localTime, reminderInstants, snoozedReminders } from '@tasksvc/proto/calendar/reminders.ts';
import { purposeKey, type Bus, type Subscription } from '@tasksvc/runtime';
import { spendActionLink } from '../db/reminder-actions.ts';
import { getTask, lockFamily, tasksForReminders, updateTask } from '../db/tasks.ts';
import { ensureProfile } from '../db/profiles.ts';
import { notificationLinks, verifyLink } from '../domain/action-links.ts';
import { emitTaskEvent, toTask, transact, type Ctx } from './common.ts';
import { afterSubtaskDone, completeIn } from './completion.ts';

/**
 * Reminders at a time, the tasks service's part: at the moment the scheduler's due-queue fires a
 * reminder, whether it still goes out and with what (the task is the truth, not the queue's copy),
 * and the action links of its notification (Done, Snooze 1 h).
 */

/** A reminder sent more than this after its time says it is late. */
export const LATE_AFTER_MS = 60_000;
/** "Snooze 1 h". */
export const SNOOZE_MINUTES = 60;
/** The key of the action links: derived for this purpose only. */
const LINK_PURPOSE = 'reminder-action-links/v1';

type ReminderRow = Awaited<ReturnType<typeof tasksForReminders>>[number];

/** The verdict on one due reminder (pure but for the links' nonce). */
export function verdictFor(row: ReminderRow | undefined, due: DueReminder, now: Date, links: (taskId: string, userId: string) => Record<'done' | 'snooze', string>): ReminderVerdict {
  if (!row || row.userId !== due.userId) return { verdict: 'drop', reason: 'deleted' };
  if (row.type !== 'RECURRING' && row.completedAt) return { verdict: 'drop', reason: 'completed' };
  const zone = row.zone;
  const current = reminderInstants(row, zone).find((r) => r.key === due.key);
  if (!current) return { verdict: 'drop', reason: 'removed' };
  const queued = Date.parse(due.at);
  // another instant (the due date moved without the queue hearing yet, or the zone changed): the queue
  // holds it at its new time if that is still to come; an instant passed meanwhile goes now, late
  if (current.at.getTime() !== queued && current.at.getTime() > now.getTime()) return { verdict: 'move', at: current.at.toISOString() };
  const today = localDate(now, zone);
  if (row.pausedAt && (!row.pausedUntil || row.pausedUntil > today)) return { verdict: 'drop', reason: 'paused' };
  if ((row.vacationStartDate || row.vacationEndDate) && (row.vacationStartDate ?? '0000-01-01') <= today && (row.vacationEndDate ?? '9999-12-31') >= today) return { verdict: 'drop', reason: 'vacation' };
  const at = current.at;
  const due_ = row.type === 'RECURRING' ? row.nextDueDate : row.dueDate;
  const lines: string[] = [];
  if (due_) lines.push(`Due ${due_ === today ? 'today' : due_}${row.dueTime ? ` at ${row.dueTime}` : ''}`);
  if (now.getTime() - at.getTime() > LATE_AFTER_MS) lines.push(`Sent late: this reminder was due at ${localTime(at, zone)} on ${localDate(at, zone)}, when the service was not running.`);
  const link = links(row.id, row.userId);
  const actions: NotificationAction[] = [
    { id: 'done', label: 'Done', url: `/api/reminder-actions/${link.done}` },
    { id: 'snooze', label: 'Snooze 1 h', url: `/api/reminder-actions/${link.snooze}` },
  ];
  return { verdict: 'send', title: row.title.slice(0, 200), body: lines.join('\n') || 'Reminder', url: '/tasks', actions };
}

export function registerReminders(bus: Bus, ctx: Ctx): Subscription[] {
  const key = purposeKey(ctx.config.AUTH_SECRET, LINK_PURPOSE);
  return [
    bus.serve(checkRemindersRpc, async ({ reminders }) => {
      const now = new Date();
      const rows = new Map((await tasksForReminders(ctx.pool, [...new Set(reminders.map((r) => r.taskId))])).map((r) => [r.id, r]));
      return { verdicts: reminders.map((due) => verdictFor(rows.get(due.taskId), due, now, (taskId, userId) => notificationLinks(key, taskId, userId, now))) };
    }),
    bus.serve(reminderActionsApi.act.rpc, (call) => act(ctx, key, call)),
  ];
}

/**
 * A notification's button: Done completes the task and Snooze 1 h adds a reminder an hour from
 * now, each through the same code as the app (coins, events). The link is spent in the same
 * transaction, so it works once: a second use is 409, an expired link 410, a forged one 403.
 */
async function act(ctx: Ctx, key: Buffer, call: HttpCall<{ token: string }, unknown, unknown>) {
  const now = new Date();
  const check = verifyLink(key, call.params.token, now);
  if (!check.ok) {
    if (check.why === 'expired') throw new AppError('LINK_EXPIRED', 'this reminder link has expired; open the app instead');
    throw new AppError('FORBIDDEN', 'this is not a valid reminder link');
  }
  const { action, taskId, userId, nonce } = check.claims;
  return transact(ctx, async (c) => {
    const spent = await spendActionLink(c, { nonce, userId, taskId, action });
    if (spent) throw new AppError('CONFLICT', `this reminder was already answered (${spent.action} at ${spent.usedAt.toISOString()})`);
    const profile = await ensureProfile(c, userId);
    const today = localDate(now, profile.timezone);
    await lockFamily(c, userId, taskId);
    const current = await getTask(c, userId, taskId, today);
    if (!current) throw new AppError('TASKS_NOT_FOUND', 'the task no longer exists');
    if (action === 'done') {
      if (current.completedAt) throw new AppError('ALREADY_COMPLETED', 'task already completed');
      // "Done" cannot ask about open subtasks: the person said the task is done, so they are too (docs/tasks.md)
      const who = { userId, today, now };
      const done = await completeIn(c, who, current, { awardCoins: true, completeSubtasks: true });
      if (current.parentId) await afterSubtaskDone(c, who, current.parentId, done.completionId, { awardCoins: true, autoComplete: profile.autoCompleteParent });
      return { action, task: toTask(done.row), coinsEarned: done.coins, remindAt: null };
    }
    const reminders = snoozedReminders(current.reminders, now, SNOOZE_MINUTES);
    if (!reminders) throw new AppError('CONFLICT', 'the task already has 5 reminders to come; snooze it in the app');
    const row = (await updateTask(c, userId, taskId, { reminders }, today))!;
    await emitTaskEvent(c, 'task.updated', row, { before: current, zone: profile.timezone });
    return { action, task: toTask(row), coinsEarned: null, remindAt: new Date(now.getTime() + SNOOZE_MINUTES * 60_000).toISOString() };
  });
}
