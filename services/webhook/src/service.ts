import { notificationRequested, TASK_EVENTS_FILTER } from '@tasksvc/proto';
import { consumeUserDeletion, createOutbound, resealInBackground, startOutboxRelay, userDeletionDurable, type ServiceDefinition } from '@tasksvc/runtime';
import * as schema from './db/schema.ts';
import { consumeTaskEvents, WEBHOOK_CONSUMER } from './handlers/events.ts';
import { serveWebhookApi } from './handlers/http.ts';
import { webhookMetrics } from './metrics.ts';
import { SEALED_SIGNING_SECRETS, signingSecrets, startDeliveryWorker, type WorkerDeps } from './worker.ts';

/** Task-event webhooks: endpoint settings, durable ingestion from the bus, signed and retried delivery. */
export const webhookService: ServiceDefinition = {
  name: 'webhook',
  migrations: { schema: 'webhook', dir: new URL('../migrations', import.meta.url).pathname, outboxes: ['webhook'] },
  durables: [{ durable: WEBHOOK_CONSUMER, filter: TASK_EVENTS_FILTER }, userDeletionDurable('webhook')],
  async start({ config, bus, pool, log }) {
    const outbound = createOutbound({ allowList: config.OUTBOUND_ALLOW_LIST, userAgent: 'TaskService-Webhooks/1' });
    const relay = startOutboxRelay({ pool, bus, schema: 'webhook', events: [notificationRequested], log });
    const deps: WorkerDeps = { pool, outbound, config, log, onNotify: () => relay.kick() };
    const worker = startDeliveryWorker(deps);
    const api = serveWebhookApi({ ...deps, bus, onEnabled: () => worker.kick() });
    const consumer = await consumeTaskEvents({ bus, pool, onIngested: (hosts) => worker.kick(hosts) });
    // a deleted account's endpoints go, and with them every delivery still pending (tables derived from db/schema.ts)
    const deletion = await consumeUserDeletion({ bus, pool, log }, 'webhook', schema, ['webhook']);
    // secrets under an older SECRETS_KEYRING key (or TOTP_ENCRYPTION_KEY, before the ring) move to the current one
    const resealed = resealInBackground({ pool, log }, SEALED_SIGNING_SECRETS, signingSecrets(config));
    return {
      figures: async () => ({ webhooks: await webhookMetrics.figures() }),
      async stop() {
        await resealed;
        await consumer.stop();
        await deletion.stop();
        for (const s of api) await s.stop();
        await worker.stop();
        await relay.stop();
      },
    };
  },
};
