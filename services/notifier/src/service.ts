import { notificationRequested } from '@tasksvc/proto';
import { consumeUserDeletion, createOutbound, resealInBackground, userDeletionDurable, type ServiceDefinition } from '@tasksvc/runtime';
import * as schema from './db/schema.ts';
import type { SenderDeps } from './channels/channel.ts';
import { createMailer } from './channels/email.ts';
import { channelSecrets, SEALED_CHANNEL_SECRETS } from './channels/targets.ts';
import { pruneDeliveries } from './db/store.ts';
import { consumeNotificationRequests, NOTIFIER_CONSUMER } from './handlers/events.ts';
import { serveNotifyApi } from './handlers/http.ts';

/** Notifications: six channels per user, each notification at most once per channel, retried when transient. */
export const notifierService: ServiceDefinition = {
  name: 'notifier',
  migrations: { schema: 'notifier', dir: new URL('../migrations', import.meta.url).pathname },
  durables: [{ durable: NOTIFIER_CONSUMER, filter: notificationRequested.subject }, userDeletionDurable('notifier')],
  async start({ config, bus, pool, log }) {
    const deps: SenderDeps = { config, pool, outbound: createOutbound({ allowList: config.OUTBOUND_ALLOW_LIST, userAgent: 'TaskService-Notifier/1' }), mailer: createMailer(config) };
    const api = serveNotifyApi({ ...deps, bus, log });
    const consumer = await consumeNotificationRequests({ ...deps, bus, log });
    // a deleted account's channels, devices and log go with it (tables derived from db/schema.ts)
    const deletion = await consumeUserDeletion({ bus, pool, log }, 'notifier', schema);
    // secrets under an older SECRETS_KEYRING key (or TOTP_ENCRYPTION_KEY, before the ring) move to the current one
    const resealed = resealInBackground({ pool, log }, SEALED_CHANNEL_SECRETS, channelSecrets(config));
    const prune = setInterval(() => void pruneDeliveries(pool).catch((err: unknown) => log.warn({ err }, 'pruning the notification log failed')), 3_600_000);
    prune.unref();
    return {
      async stop() {
        await resealed;
        clearInterval(prune);
        await consumer.stop();
        await deletion.stop();
        for (const s of api) await s.stop();
        deps.mailer?.close();
      },
    };
  },
};
