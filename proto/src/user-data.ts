import { z } from 'zod';
import { defineEvent, defineRpc } from './bus.ts';
import { notificationSettings, wishlistItem } from './game.ts';
import { defineRoute, type AnyRoute } from './http.ts';
import { NOTIFICATION_CHANNEL_TYPES } from './notify.ts';
import { isoDate, taskEventName } from './task-events.ts';
import { energyLevel, task, topic } from './tasks.ts';

/**
 * The user's data going out and going away (issue #52): the versioned export document, the bus
 * requests each service answers for its own part of it, and the account-deletion event.
 *
 * The document is `{ format: "task-service-export", version: 1, exportedAt, … }`. Within a version,
 * fields are only ever added (a reader ignores keys it does not know, as the bus does); a change a
 * version-1 reader could misread (a field removed, renamed or re-typed) makes version 2. Calendar
 * dates are `YYYY-MM-DD` in the user's zone (`settings.timezone`), instants ISO 8601 in UTC. Ids are
 * the ids of this installation: an importer maps them (topicId, taskId) and never reuses them.
 *
 * Never in it: session tokens, API key hashes, TOTP secrets and backup codes, passkey public keys,
 * notification-channel and webhook secrets, push subscription keys (docs/moving.md lists every table
 * and what of it is exported).
 */

export const USER_EXPORT_FORMAT = 'task-service-export';
/** Exports (JSON and iCalendar together) a user may start per hour, as in the reference. */
export const EXPORTS_PER_HOUR = 5;
/** Account deletions a user may attempt per hour, as in the reference. */
export const DELETIONS_PER_HOUR = 5;
export const USER_EXPORT_VERSION = 1;

const instant = z.string().meta({ format: 'date-time' });
const id = z.string().meta({ format: 'uuid' });

// ── account (auth service) ──────────────────────────────────────────────────────────────────────

export const exportedAccount = z.object({
  id,
  email: z.string().nullable(),
  name: z.string().nullable(),
  image: z.string().nullable(),
  createdAt: instant,
  /** the sign-in providers linked to the account (their tokens are never stored) */
  linkedAccounts: z.array(z.object({ provider: z.string(), createdAt: instant })),
  /** whether second factors are set up: never a secret, code or key */
  security: z.object({
    totpEnabled: z.boolean(),
    backupCodesRemaining: z.number().int(),
    passkeys: z.array(z.object({ name: z.string(), createdAt: instant, lastUsedAt: instant.nullable(), backedUp: z.boolean() })),
  }),
  /** API keys by name and scope (readOnly); never the key or its hash */
  apiKeys: z.array(
    z.object({
      name: z.string(),
      /** the first characters of the key, as the settings page shows them */
      prefix: z.string(),
      readOnly: z.boolean(),
      expiresAt: instant.nullable(),
      createdAt: instant,
      lastUsedAt: instant.nullable(),
    }),
  ),
  /** signed-in browsers (never the session token) */
  sessions: z.array(
    z.object({
      createdAt: instant,
      lastActiveAt: instant,
      expiresAt: instant,
      userAgent: z.string().nullable(),
      ip: z.string().nullable(),
      secondFactorVerifiedAt: instant.nullable(),
    }),
  ),
});
export type ExportedAccount = z.infer<typeof exportedAccount>;

// ── settings, game and topics (tasks service) ───────────────────────────────────────────────────

export const exportedSettings = z.object({
  timezone: z.string(),
  /** daily quest postpone limit (1–5) */
  postponeLimit: z.number().int(),
  /** the latest energy check-in's level, which the quest matches */
  energyLevel: energyLevel.nullable(),
  /** reminder switches and local times, as `GET /api/settings/notifications` shows them */
  reminders: notificationSettings,
  /** vacation from its first to its last day (inclusive); both null when none is set */
  vacation: z.object({ startDate: isoDate.nullable(), endDate: isoDate.nullable() }),
  /** whether a secret calendar feed URL exists (the URL itself is a secret: rotate it to get a new one) */
  calendarFeed: z.object({ active: z.boolean(), createdAt: instant.nullable() }),
  createdAt: instant,
});

const streak = { current: z.number().int(), max: z.number().int(), lastDate: isoDate.nullable() };

export const exportedGame = z.object({
  coins: z.number().int(),
  /** derived from coins (docs/game-and-cron.md) */
  level: z.number().int(),
  /** never decremented, deleted tasks included */
  totalTasksCreated: z.number().int(),
  streak: z.object({ ...streak, /** `YYYY-MM` of the month the streak shield was last used */ shieldUsedMonth: z.string().nullable() }),
  questStreak: z.object(streak),
  achievements: z.array(z.object({ key: z.string(), title: z.string(), description: z.string(), coinsAwarded: z.number().int(), unlockedAt: instant })),
  /** one quest per local day */
  quests: z.array(z.object({ date: isoDate, taskId: id, tier: z.string(), completedAt: instant.nullable(), createdAt: instant })),
  postponements: z.array(
    z.object({
      taskId: id,
      date: isoDate,
      /** postponed as the day's quest, or a task on its own */
      via: z.enum(['quest', 'task']),
      previousDueDate: isoDate.nullable(),
      previousSnoozedUntil: isoDate.nullable(),
      restoredAt: instant.nullable(),
      createdAt: instant,
    }),
  ),
  energyCheckins: z.array(z.object({ date: isoDate, level: energyLevel, createdAt: instant })),
  wishlist: z.array(wishlistItem),
});

/** A topic as the API shows it, less what is the installation's (owner) or derived (counts). */
export const exportedTopic = topic.omit({ userId: true, taskCount: true, openTaskCount: true });

/**
 * A task as the API shows it (a field added to the API's task is exported with it), less the owner
 * and the derived `blocked`, plus the anchor its recurrence is counted from. Its completions are the
 * document's `completions` with its id.
 */
export const exportedTask = task.omit({ userId: true, blocked: true, subtaskCount: true, subtasksDone: true }).extend({
  /** RECURRING: the date the schedule is counted from */
  recurrenceAnchor: isoDate.nullable(),
});
export type ExportedTask = z.infer<typeof exportedTask>;

/** One completion; `taskId` null when the task has been deleted since (the completion still counts in statistics). */
export const exportedCompletion = z.object({
  id,
  taskId: id.nullable(),
  completedAt: instant,
  /** the user's local date of the completion */
  localDate: isoDate,
  coinsAwarded: z.number().int(),
  /** it completed that day's quest */
  wasDailyQuest: z.boolean(),
});
export type ExportedCompletion = z.infer<typeof exportedCompletion>;

// ── notifications (notifier) and webhooks (webhook service) ─────────────────────────────────────

export const exportedNotifications = z.object({
  channels: z.array(
    z.object({
      type: z.enum(NOTIFICATION_CHANNEL_TYPES),
      enabled: z.boolean(),
      /** the channel's settings that are not secrets (server, topic, chat id, address, URL…) */
      config: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])),
      /** names of the secrets that are set (their values are never exported) */
      secretsSet: z.array(z.string()),
      updatedAt: instant,
    }),
  ),
  /** browsers subscribed to push, by the push service's host (the subscription's keys stay here) */
  pushDevices: z.array(z.object({ endpointHost: z.string(), userAgent: z.string().nullable(), createdAt: instant })),
  /** the notification log (kept 30 days) */
  log: z.array(
    z.object({
      channel: z.enum(NOTIFICATION_CHANNEL_TYPES),
      title: z.string(),
      tag: z.string().nullable(),
      status: z.string(),
      attempts: z.number().int(),
      error: z.string().nullable(),
      test: z.boolean(),
      createdAt: instant,
    }),
  ),
});

export const exportedWebhook = z.object({
  id,
  url: z.string(),
  /** empty: every task event */
  events: z.array(taskEventName),
  enabled: z.boolean(),
  /** whether a signing secret is set (never the secret) */
  hasSecret: z.boolean(),
  disabledReason: z.string().nullable(),
  createdAt: instant,
  updatedAt: instant,
});

// ── the document ────────────────────────────────────────────────────────────────────────────────

export const userExport = z
  .object({
    format: z.literal(USER_EXPORT_FORMAT),
    version: z.literal(USER_EXPORT_VERSION),
    exportedAt: instant,
    /** the installation that wrote it */
    generator: z.object({ app: z.string(), version: z.string() }),
    account: exportedAccount,
    settings: exportedSettings,
    game: exportedGame,
    topics: z.array(exportedTopic),
    notifications: exportedNotifications,
    webhooks: z.array(exportedWebhook),
    tasks: z.array(exportedTask),
    completions: z.array(exportedCompletion),
  })
  .meta({ title: 'Task Service user export', description: 'GET /api/user/export: everything a user owns, version 1 (docs/moving.md).' });
export type UserExport = z.infer<typeof userExport>;

/** The export document's JSON Schema (draft 2020-12), as published in the OpenAPI document and docs/user-export.schema.json. */
export function userExportJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(userExport, { io: 'output', target: 'draft-2020-12' });
}

// ── bus: each service answers for its own part ──────────────────────────────────────────────────

const forUser = z.object({ userId: z.uuid() });

export const exportAccountRpc = defineRpc('auth.user-data.export', forUser, exportedAccount);

/** The tasks service's part apart from tasks and completions, which are paged (below). */
export const exportTasksPartRpc = defineRpc(
  'tasks.user-data.export',
  forUser,
  z.object({ settings: exportedSettings, game: exportedGame, topics: z.array(exportedTopic), taskCount: z.number().int(), completionCount: z.number().int() }),
);

/**
 * One page of tasks or completions, in a stable order from `after` (the previous page's `next`; null
 * for the first). Pages are bounded in rows and in bytes so a reply stays well under NATS's message
 * size; `next` is null on the last page.
 */
export const exportPageRequest = forUser.extend({ after: z.string().max(200).nullable(), limit: z.number().int().min(1).max(2000) });
export const exportTasksPageRpc = defineRpc('tasks.user-data.tasks', exportPageRequest, z.object({ tasks: z.array(exportedTask), next: z.string().nullable() }));
export const exportCompletionsPageRpc = defineRpc('tasks.user-data.completions', exportPageRequest, z.object({ completions: z.array(exportedCompletion), next: z.string().nullable() }));

/**
 * The iCalendar export in pieces: the head (VCALENDAR's properties and the user's VTIMEZONE), then
 * pages of VTODOs, each with the VTIMEZONE of any other zone its tasks name that the earlier pages
 * did not (`zonesWritten`); the gateway writes `END:VCALENDAR` after the last.
 */
export const exportIcsHeadRpc = defineRpc('tasks.user-data.ics.head', forUser, z.object({ text: z.string(), zone: z.string(), taskCount: z.number().int() }));
export const exportIcsPageRpc = defineRpc(
  'tasks.user-data.ics.page',
  exportPageRequest.extend({ zonesWritten: z.array(z.string().max(100)).max(1000) }),
  z.object({ text: z.string(), zones: z.array(z.string()), next: z.string().nullable() }),
);

export const exportNotificationsRpc = defineRpc('notifier.user-data.export', forUser, exportedNotifications);
export const exportWebhooksRpc = defineRpc('webhook.user-data.export', forUser, z.object({ webhooks: z.array(exportedWebhook) }));

// ── account deletion ────────────────────────────────────────────────────────────────────────────

/**
 * How recent a sign-in (the session's start) or a second-factor proof must be for the account to be
 * deleted. API keys can never delete an account.
 */
export const RECENT_AUTH_MINUTES = 10;

/**
 * Published (durably, from the auth service's outbox) once the account is gone from the auth
 * service: every service's consumer deletes the user's rows in its own schema.
 */
export const userDeleted = defineEvent('events.user.deleted', z.object({ userId: z.uuid(), deletedAt: z.string() }));
export type UserDeleted = z.infer<typeof userDeleted.schema>;

export const userDataApi = {
  deleteAccount: defineRoute({
    method: 'DELETE',
    path: '/api/user',
    auth: 'user',
    subject: 'auth.http.user.delete',
    response: z.object({ success: z.literal(true) }),
    summary: `Delete the account and everything it owns, in every service. Needs a browser session signed in or second-factor-verified in the last ${RECENT_AUTH_MINUTES} minutes (403 RECENT_AUTH_REQUIRED otherwise); API keys cannot (403 FORBIDDEN). ${DELETIONS_PER_HOUR} per hour.`,
    tag: 'Your data',
  }),
};

/** HTTP routes of the user's data that are forwarded as they are (the exports stream from the gateway: services/gateway/src/user-export.ts). */
export const userDataRoutes: AnyRoute[] = Object.values(userDataApi);
