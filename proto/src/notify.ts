import { z } from 'zod';
import { defineEvent } from './bus.ts';
import type { AnyRoute } from './http.ts';

/** The spec's notification tags. */
export const NOTIFICATION_TAGS = ['daily-quest', 'streak', 'due-today', 'overdue', 'recurring-due', 'weekly-review', 'morning-briefing', 'achievement'] as const;
export const notificationTag = z.enum(NOTIFICATION_TAGS);

/**
 * Ask the notifier to notify one user on all their channels (and every HTTP Alert URL).
 * `dedupeKey` is stable for one logical notification (e.g. `streak:<user>:<date>`): the notifier
 * delivers each key at most once per channel, so a redelivered request never notifies twice.
 */
export const notificationRequest = z.object({
  userId: z.uuid(),
  title: z.string().min(1).max(200),
  body: z.string().max(4000),
  /** relative application path to open, e.g. `/tasks` */
  url: z.string().nullable(),
  tag: z.string().nullable(),
  dedupeKey: z.string().min(1).max(300),
});
export type NotificationRequest = z.infer<typeof notificationRequest>;

export const notificationRequested = defineEvent('events.notify.requested', notificationRequest);

/** HTTP routes of the notifier (channels, test, history, push subscriptions). */
export const notifyRoutes: AnyRoute[] = [];
