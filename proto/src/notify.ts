import { z } from 'zod';
import { defineEvent } from './bus.ts';
import { defineRoute, rawResponse, signedLinkToken, type AnyRoute } from './http.ts';

/** The spec's notification tags. */
export const NOTIFICATION_TAGS = ['daily-quest', 'streak', 'due-today', 'overdue', 'recurring-due', 'weekly-review', 'morning-briefing', 'achievement', 'reminder'] as const;
export const notificationTag = z.enum(NOTIFICATION_TAGS);

/**
 * A button on a notification, where the channel has them (ntfy action buttons, Web Push actions):
 * the app POSTs to `url` (a relative application path: a signed, single-use action link).
 */
export const notificationAction = z.object({
  id: z.enum(['done', 'snooze']),
  label: z.string().min(1).max(40),
  url: z.string().startsWith('/').max(800),
});
export type NotificationAction = z.infer<typeof notificationAction>;

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
  /** buttons for the channels that show them (the others show the text and the link) */
  actions: z.array(notificationAction).max(3).optional(),
});
export type NotificationRequest = z.infer<typeof notificationRequest>;

export const notificationRequested = defineEvent('events.notify.requested', notificationRequest);

/** The six channel types, as they appear in `/api/settings/notification-channels/:type`. */
export const NOTIFICATION_CHANNEL_TYPES = ['push', 'ntfy', 'pushover', 'telegram', 'email', 'http-alert'] as const;
export const notificationChannelType = z.enum(NOTIFICATION_CHANNEL_TYPES);
export type NotificationChannelType = z.infer<typeof notificationChannelType>;

/** The spec's HTTP Alert body, exactly. */
export const httpAlertPayload = z
  .object({
    event: z.literal('service.notification'),
    title: z.string(),
    body: z.string(),
    url: z.string().nullable(),
    tag: z.string().nullable(),
    timestamp: z.string(),
  })
  .strict();
export type HttpAlertPayload = z.infer<typeof httpAlertPayload>;

/** Tests per user, channel and hour (issue 56 #2: 30 test mails to someone else took 6.3 s). */
export const CHANNEL_TESTS_PER_HOUR = 10;
/** Saves per user, channel and hour: saving a new e-mail address mails it a confirmation link. */
export const CHANNEL_SAVES_PER_HOUR = 20;

const secretField = (what: string) => z.string().min(1, 'is required').max(512, `${what} must be at most 512 characters`);

/**
 * Per-type configuration as the client sends it (PUT body `config`). Secret fields may be omitted
 * on update to keep the stored value; `null` removes an optional one.
 */
export const channelConfigInput = {
  push: z.object({}).strict(),
  ntfy: z
    .object({
      /** default NTFY_DEFAULT_SERVER (https://ntfy.sh) */
      server: z.string().trim().max(2048).nullable().optional(),
      topic: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, - or _'),
      /** access token for protected topics */
      token: secretField('token').nullable().optional(),
      priority: z.number().int().min(1).max(5).nullable().optional(),
    })
    .strict(),
  pushover: z
    .object({
      appToken: z.string().regex(/^[A-Za-z0-9]{20,40}$/, 'must be the 30-character application token').optional(),
      userKey: z.string().regex(/^[A-Za-z0-9]{20,40}$/, 'must be the 30-character user or group key').optional(),
      device: z.string().max(100).nullable().optional(),
      priority: z.number().int().min(-2).max(1).nullable().optional(),
    })
    .strict(),
  telegram: z
    .object({
      botToken: z.string().regex(/^\d{3,20}:[A-Za-z0-9_-]{20,80}$/, 'must be a bot token like 123456:ABC…').optional(),
      chatId: z.string().regex(/^(-?\d{1,20}|@[A-Za-z0-9_]{4,64})$/, 'must be a numeric chat id or @channelname'),
    })
    .strict(),
  email: z
    .object({
      /** default: the signed-in user's email */
      address: z.email('must be an email address').max(320).optional(),
    })
    .strict(),
  'http-alert': z
    .object({
      url: z.string().trim().min(1, 'is required').max(2048),
      secret: z.string().min(8, 'must be at least 8 characters').max(256).nullable().optional(),
    })
    .strict(),
} as const;

/** A channel as the settings page sees it; secrets only as `has…` flags. */
export const notificationChannel = z.object({
  type: notificationChannelType,
  /** false when the operator has not enabled it (email without SMTP_HOST, push without VAPID keys) */
  available: z.boolean(),
  configured: z.boolean(),
  enabled: z.boolean(),
  config: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])).nullable(),
  /** the config fields that are secrets: write-only, shown in `config` only as `has…` flags */
  secretFields: z.array(z.string()),
  updatedAt: z.string().nullable(),
  /**
   * E-mail: 'waiting' from a save that set a new address until its owner opens the confirmation link
   * mailed to it (nothing else is mailed there meanwhile, tests included), then 'confirmed'. null for
   * the channels that need no confirmation, and for an e-mail channel not configured.
   */
  confirmation: z.enum(['waiting', 'confirmed']).nullable().default(null),
});
export type NotificationChannel = z.infer<typeof notificationChannel>;

export const notificationHistoryEntry = z.object({
  id: z.uuid(),
  channel: notificationChannelType,
  title: z.string(),
  tag: z.string().nullable(),
  /** sent, failed (given up), retrying, sending */
  status: z.enum(['sent', 'failed', 'retrying', 'sending']),
  attempts: z.number().int(),
  error: z.string().nullable(),
  test: z.boolean(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const channelTestResult = z.object({
  type: notificationChannelType,
  ok: z.boolean(),
  /** targets reached (push: devices) */
  delivered: z.number().int(),
  error: z.string().nullable(),
});

export const pushSubscriptionInput = z
  .object({
    endpoint: z.string().trim().url('must be the push service URL').max(2048),
    expirationTime: z.number().nullable().optional(),
    keys: z
      .object({
        p256dh: z.string().regex(/^[A-Za-z0-9_-]{80,100}={0,2}$/, 'must be the base64url P-256 public key'),
        auth: z.string().regex(/^[A-Za-z0-9_-]{16,32}={0,2}$/, 'must be the base64url auth secret'),
      })
      .strict(),
  })
  .strict();

const pushSubscriptionView = z.object({ id: z.uuid(), endpointHost: z.string(), userAgent: z.string().nullable(), createdAt: z.string() });
const typeParam = z.object({ type: notificationChannelType }).strict();

export const notifyApi = {
  channels: defineRoute({
    method: 'GET',
    path: '/api/settings/notification-channels',
    auth: 'user',
    subject: 'notifier.http.channels',
    response: z.object({ channels: z.array(notificationChannel) }),
    summary: 'All six channels with availability and (redacted) settings',
    tag: 'notifications',
  }),
  channel: defineRoute({
    method: 'GET',
    path: '/api/settings/notification-channels/:type',
    auth: 'user',
    subject: 'notifier.http.channel',
    params: typeParam,
    response: notificationChannel,
    summary: 'One channel',
    tag: 'notifications',
  }),
  saveChannel: defineRoute({
    method: 'PUT',
    path: '/api/settings/notification-channels/:type',
    auth: 'user',
    subject: 'notifier.http.channel.save',
    params: typeParam,
    body: z.object({ enabled: z.boolean().default(true), config: z.record(z.string(), z.unknown()).default({}) }).strict(),
    response: notificationChannel,
    summary: 'Configure a channel (config fields per type; see channelConfigInput). E-mail: a new address is mailed a confirmation link and waits for it (`confirmation`). At most CHANNEL_SAVES_PER_HOUR per channel',
    tag: 'notifications',
  }),
  deleteChannel: defineRoute({
    method: 'DELETE',
    path: '/api/settings/notification-channels/:type',
    auth: 'user',
    subject: 'notifier.http.channel.delete',
    params: typeParam,
    status: 204,
    response: z.null(),
    summary: 'Remove a channel configuration (push: also every device subscription)',
    tag: 'notifications',
  }),
  testChannel: defineRoute({
    method: 'POST',
    path: '/api/settings/notification-channels/:type/test',
    auth: 'user',
    subject: 'notifier.http.channel.test',
    params: typeParam,
    status: 200,
    response: channelTestResult,
    summary: 'Send a test notification on one channel now (at most CHANNEL_TESTS_PER_HOUR per channel; e-mail: 409 while the address waits for confirmation)',
    tag: 'notifications',
  }),
  confirmEmail: defineRoute({
    method: 'GET',
    path: '/api/notification-channels/email/confirm/:token',
    auth: 'none',
    subject: 'notifier.http.email.confirm',
    params: z.object({ token: signedLinkToken }).strict(),
    kind: 'raw',
    response: rawResponse,
    summary:
      "The link mailed to a new e-mail channel address: confirms it and answers a plain page. Signed, single-use, expiring; the token is the only authentication. 403 for a link that is not ours, 409 once used or replaced by a newer one, 410 once expired",
    tag: 'notifications',
  }),
  history: defineRoute({
    method: 'GET',
    path: '/api/settings/notification-history',
    auth: 'user',
    subject: 'notifier.http.history',
    response: z.object({ entries: z.array(notificationHistoryEntry) }),
    summary: 'The last 50 delivery attempts, newest first',
    tag: 'notifications',
  }),
  vapidPublicKey: defineRoute({
    method: 'GET',
    path: '/api/push/vapid-public-key',
    auth: 'none',
    subject: 'notifier.http.push.vapid',
    response: z.object({ publicKey: z.string().nullable() }),
    summary: 'VAPID public key for PushManager.subscribe (null when push is not configured)',
    tag: 'notifications',
  }),
  pushSubscribe: defineRoute({
    method: 'POST',
    path: '/api/push/subscribe',
    auth: 'user',
    subject: 'notifier.http.push.subscribe',
    body: pushSubscriptionInput,
    response: pushSubscriptionView,
    summary: "Register this device's push subscription (idempotent per endpoint)",
    tag: 'notifications',
  }),
  pushUnsubscribe: defineRoute({
    method: 'POST',
    path: '/api/push/unsubscribe',
    auth: 'user',
    subject: 'notifier.http.push.unsubscribe',
    body: z.object({ endpoint: z.string().max(2048) }).strict(),
    status: 200,
    response: z.object({ removed: z.boolean() }),
    summary: "Remove this device's push subscription",
    tag: 'notifications',
  }),
  pushSubscriptions: defineRoute({
    method: 'GET',
    path: '/api/push/subscriptions',
    auth: 'user',
    subject: 'notifier.http.push.subscriptions',
    response: z.object({ subscriptions: z.array(pushSubscriptionView) }),
    summary: 'Devices subscribed to browser push',
    tag: 'notifications',
  }),
};

/** HTTP routes of the notifier (channels, test, history, push subscriptions). */
export const notifyRoutes: AnyRoute[] = Object.values(notifyApi);
