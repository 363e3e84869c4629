import { z } from 'zod';
import { defineRpc } from './bus.ts';
import { defineRoute, signedLinkToken, type AnyRoute } from './http.ts';
import { notificationAction } from './notify.ts';
import { task } from './tasks.ts';

/**
 * Reminders at a time: the scheduler's due-queue fires them; the tasks service, which owns the
 * tasks, says at that moment whether each one still goes out (and with what text and actions).
 * The rules are in docs/notifications.md.
 */

/** Reminders the scheduler asks about at once. */
export const MAX_REMINDER_CHECK = 1_000;

export const dueReminder = z.object({
  taskId: z.uuid(),
  userId: z.uuid(),
  /** the reminder's key within its task (proto/src/calendar/reminders.ts reminderKey) */
  key: z.string().min(1).max(100),
  /** the instant the queue holds for it */
  at: z.string(),
});
export type DueReminder = z.infer<typeof dueReminder>;

/**
 * One answer per asked reminder, in order:
 * - `send`: it goes out now, with this text (a late one says so) and actions;
 * - `drop`: it does not (the task is done, deleted, paused, the user is on vacation, the reminder
 *   was removed or changed): `reason` says which;
 * - `move`: its instant is now another one, still to come (the user's zone changed): queue it there.
 */
export const reminderVerdict = z.discriminatedUnion('verdict', [
  z.object({
    verdict: z.literal('send'),
    title: z.string().min(1).max(200),
    body: z.string().max(4000),
    url: z.string().nullable(),
    actions: z.array(notificationAction).max(3),
  }),
  z.object({ verdict: z.literal('drop'), reason: z.enum(['deleted', 'completed', 'removed', 'paused', 'vacation']) }),
  z.object({ verdict: z.literal('move'), at: z.string() }),
]);
export type ReminderVerdict = z.infer<typeof reminderVerdict>;

export const checkRemindersRpc = defineRpc(
  'tasks.reminders.check',
  z.object({ reminders: z.array(dueReminder).max(MAX_REMINDER_CHECK) }),
  z.object({ verdicts: z.array(reminderVerdict) }),
);

/** Every scheduler replica re-arms its timer when a reminder earlier than its next one is queued. */
export const REMINDER_ARMED_SUBJECT = 'scheduler.reminders.armed';
export const reminderArmed = z.object({ at: z.string() });

/** The action link's token (services/tasks/src/domain/action-links.ts). */
export const actionToken = signedLinkToken;

export const reminderActionReply = z.object({
  action: z.enum(['done', 'snooze']),
  task,
  /** done: coins the completion granted */
  coinsEarned: z.number().int().nullable(),
  /** snooze: when the reminder comes again */
  remindAt: z.string().nullable(),
});

export const reminderActionsApi = {
  act: defineRoute({
    method: 'POST',
    path: '/api/reminder-actions/:token',
    auth: 'none',
    subject: 'tasks.http.reminder.action',
    params: z.object({ token: actionToken }).strict(),
    body: z.object({}).strict().optional(),
    response: reminderActionReply,
    status: 200,
    summary:
      "A reminder notification's action link (Done, Snooze 1 h): signed, single-use, expiring; the token is the only authentication. 403 for a link that is not ours, 409 once used, 410 once expired",
    tag: 'Tasks',
  }),
};

export const reminderRoutes: AnyRoute[] = Object.values(reminderActionsApi);
