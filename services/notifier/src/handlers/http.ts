import { randomUUID } from 'node:crypto';
import {
  AppError,
  channelConfigInput,
  exportNotificationsRpc,
  issuesFromZod,
  NOTIFICATION_CHANNEL_TYPES,
  notifyApi,
  type Identity,
  type NotificationChannel,
  type NotificationChannelType,
} from '@tasksvc/proto';
import { jsonView, OutboundError, type Bus, type Logger, type Subscription } from '@tasksvc/runtime';
import type { SenderDeps } from '../channels/channel.ts';
import { confirmByLink, confirmationMail } from '../channels/email-confirmation.ts';
import { smtpFailure } from '../channels/email.ts';
import { channelAvailable, channels } from '../channels/index.ts';
import { channelSecrets, readSecrets, targetsFor } from '../channels/targets.ts';
import {
  deleteChannel,
  deletePushSubscription,
  getChannel,
  history,
  notificationLog,
  listChannels,
  listPushSubscriptions,
  upsertChannel,
  upsertPushSubscription,
  type ChannelRow,
  type PushSubscriptionRow,
} from '../db/store.ts';
import { deliver } from '../deliver.ts';
import { mergeChannelInput, redactedConfig, type Scalar } from '../domain/channel-config.ts';
import { pushKeyIssues } from '../domain/push-keys.ts';

/** A device as the settings page lists it: the push service's host, never the endpoint URL (a capability). */
const subscriptionView = (r: PushSubscriptionRow) => ({ id: r.id, endpointHost: new URL(r.endpoint).host, userAgent: r.userAgent, createdAt: r.createdAt.toISOString() });

function caller(user: Identity | null): Identity {
  if (!user) throw new AppError('UNAUTHENTICATED', 'sign in first');
  return user;
}

export function serveNotifyApi(deps: SenderDeps & { bus: Bus; log: Logger }): Subscription[] {
  const { bus, pool, config, outbound, log } = deps;

  const requireAvailable = (type: NotificationChannelType) => {
    if (!channelAvailable(config, type)) throw new AppError('BAD_REQUEST', channels[type].availability?.reason ?? `${type} is not available`);
  };

  const view = (type: NotificationChannelType, row: ChannelRow | null, devices: number): NotificationChannel => {
    const available = channelAvailable(config, type);
    if (type === 'push') {
      return { type, available, configured: devices > 0, enabled: row?.enabled ?? false, config: { devices }, secretFields: [], updatedAt: row?.updatedAt.toISOString() ?? null, confirmation: null };
    }
    return {
      type,
      available,
      configured: row !== null,
      enabled: row?.enabled ?? false,
      config: row ? redactedConfig(channels[type].secretFields, row.config, row.secretFields) : null,
      secretFields: [...channels[type].secretFields],
      updatedAt: row?.updatedAt.toISOString() ?? null,
      confirmation: row && channels[type].waiting ? (channels[type].waiting(row) ? 'waiting' : 'confirmed') : null,
    };
  };

  /** Check an outbound URL now (it is checked again on every send). */
  const checkUrl = async (url: string, path: string): Promise<string> => {
    try {
      return (await outbound.check(url)).url.toString();
    } catch (err) {
      if (err instanceof OutboundError) throw new AppError('VALIDATION_FAILED', `invalid ${path}: ${err.message}`, [{ path, message: err.message }]);
      throw err;
    }
  };

  const devicesOf = async (userId: string) => (await listPushSubscriptions(pool, userId)).length;

  return [
    // the user's export: settings that are not secrets, the names of the secrets set, devices by host, the log
    bus.serve(exportNotificationsRpc, async ({ userId }) => {
      const [rows, subs, log] = await Promise.all([listChannels(pool, userId), listPushSubscriptions(pool, userId), notificationLog(pool, userId)]);
      return {
        channels: rows.map((r) => ({ type: r.type, enabled: r.enabled, config: r.config, secretsSet: r.secretFields, updatedAt: r.updatedAt.toISOString() })),
        pushDevices: subs.map((r) => ({ endpointHost: subscriptionView(r).endpointHost, userAgent: r.userAgent, createdAt: r.createdAt.toISOString() })),
        log: log.map((d) => ({ channel: d.channel, title: d.title, tag: d.tag, status: d.status, attempts: d.attempts, error: d.error, test: d.test, createdAt: d.createdAt.toISOString() })),
      };
    }),
    bus.serve(notifyApi.channels.rpc, async ({ user }) => {
      const me = caller(user);
      const rows = new Map((await listChannels(pool, me.id)).map((r) => [r.type, r]));
      const devices = await devicesOf(me.id);
      return { channels: NOTIFICATION_CHANNEL_TYPES.map((t) => view(t, rows.get(t) ?? null, devices)) };
    }),
    bus.serve(notifyApi.channel.rpc, async ({ user, params }) => {
      const me = caller(user);
      return view(params.type, await getChannel(pool, me.id, params.type), await devicesOf(me.id));
    }),
    bus.serve(notifyApi.saveChannel.rpc, async ({ user, params, body }) => {
      const me = caller(user);
      const type = params.type;
      requireAvailable(type);
      const parsed = channelConfigInput[type].safeParse(body.config);
      if (!parsed.success) throw new AppError('VALIDATION_FAILED', 'invalid channel settings', issuesFromZod(parsed.error.issues, 'body.config'));
      const input = { ...(parsed.data as Record<string, unknown>) };
      const existing = await getChannel(pool, me.id, type);
      const stored = existing ? readSecrets(config, existing) : {};
      const merged = mergeChannelInput(channels[type], input, 'error' in stored ? {} : (stored));
      if (merged.missing.length > 0) {
        throw new AppError(
          'VALIDATION_FAILED',
          'invalid channel settings',
          merged.missing.map((f) => ({ path: `body.config.${f}`, message: 'is required' })),
        );
      }
      const secretFields = Object.keys(merged.secrets);
      const box = channelSecrets(config);
      if (secretFields.length > 0 && !box.canSeal) {
        const message = 'cannot store a channel secret: the operator must set SECRETS_KEYRING (<id>:<64 hex characters>) to encrypt secrets at rest';
        throw new AppError('BAD_REQUEST', message, secretFields.map((f) => ({ path: `body.config.${f}`, message })));
      }
      const cfg: Record<string, Scalar> = merged.config;
      await channels[type].prepare?.(cfg, { checkUrl, email: me.email });
      const secretsEnc = secretFields.length > 0 ? box.seal(JSON.stringify(merged.secrets)) : null;
      // an e-mail address not confirmed (new, changed, or still waiting) gets a new link, and earlier links stop working
      const address = typeof cfg.address === 'string' ? cfg.address : null;
      const confirm = type === 'email' && address && existing?.confirmedAddress !== address ? confirmationMail(config, me.id, address, new Date()) : null;
      const row = await upsertChannel(pool, me.id, type, { enabled: body.enabled, config: cfg, secretsEnc, secretFields, ...(type === 'email' ? { confirmNonce: confirm?.nonce ?? null } : {}) });
      if (confirm && deps.mailer) {
        await deps.mailer.sendMail(confirm.message).catch((err: unknown) => {
          log.warn({ err }, 'confirmation mail not sent');
          throw new AppError('SERVICE_UNAVAILABLE', `the channel is saved, but the confirmation mail to ${address} could not be sent (${smtpFailure(err).error}); save it again for a new link`);
        });
      }
      return view(type, row, await devicesOf(me.id));
    }),
    bus.serve(notifyApi.deleteChannel.rpc, async ({ user, params }) => {
      if (!(await deleteChannel(pool, caller(user).id, params.type))) throw new AppError('NOT_FOUND', `${params.type} is not configured`);
      return null;
    }),
    bus.serve(notifyApi.testChannel.rpc, async ({ user, params }) => {
      const me = caller(user);
      requireAvailable(params.type);
      const saved = await getChannel(pool, me.id, params.type);
      const waiting = saved && channels[params.type].waiting?.(saved);
      if (waiting) throw new AppError('CONFLICT', waiting);
      const targets = await targetsFor(deps, me.id, params.type);
      if (targets.length === 0) throw new AppError('NOT_FOUND', params.type === 'push' ? 'no device is subscribed to browser push' : `${params.type} is not configured`);
      const report = await deliver(
        pool,
        log,
        targets,
        { userId: me.id, title: 'Test notification', body: 'Notifications on this channel work.', url: '/settings', tag: null, dedupeKey: `test:${randomUUID()}` },
        { test: true },
      );
      return { type: params.type, ok: report.sent > 0 && report.failed === 0, delivered: report.sent, error: report.errors.join('; ') || null };
    }),
    bus.serve(notifyApi.confirmEmail.rpc, ({ params }) => confirmByLink(config, pool, params.token, new Date())),
    bus.serve(notifyApi.history.rpc, async ({ user }) => ({
      entries: (await history(pool, caller(user).id)).map(jsonView),
    })),
    bus.serve(notifyApi.vapidPublicKey.rpc, async () => ({ publicKey: channelAvailable(config, 'push') ? config.PUBLIC_VAPID_PUBLIC_KEY! : null })),
    bus.serve(notifyApi.pushSubscribe.rpc, async ({ user, body, userAgent }) => {
      const me = caller(user);
      requireAvailable('push');
      const keyIssues = pushKeyIssues(body.keys);
      if (keyIssues.length > 0) throw new AppError('VALIDATION_FAILED', 'invalid push subscription keys', keyIssues);
      const endpoint = await checkUrl(body.endpoint, 'body.endpoint');
      const row = await upsertPushSubscription(pool, me.id, { endpoint, p256dh: body.keys.p256dh, auth: body.keys.auth, userAgent: userAgent?.slice(0, 300) ?? null });
      return subscriptionView(row);
    }),
    bus.serve(notifyApi.pushUnsubscribe.rpc, async ({ user, body }) => ({ removed: await deletePushSubscription(pool, caller(user).id, body.endpoint) })),
    bus.serve(notifyApi.pushSubscriptions.rpc, async ({ user }) => ({
      subscriptions: (await listPushSubscriptions(pool, caller(user).id)).map(subscriptionView),
    })),
  ];
}
