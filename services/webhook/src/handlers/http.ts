import { randomUUID } from 'node:crypto';
import { AppError, exportWebhooksRpc, MAX_WEBHOOK_ENDPOINTS, taskEvent, webhookApi, type Identity, type TaskEventPayload } from '@tasksvc/proto';
import { inTransaction, OutboundError, type Bus, type Config, type Outbound, type Pool, type Subscription } from '@tasksvc/runtime';
import { deliveryView, getDelivery, insertTestDelivery, listDeliveries, requeue, type ClaimedDelivery } from '../db/deliveries.ts';
import { deleteEndpoint, endpointView, getEndpoint, insertEndpoint, listEndpoints, updateEndpoint } from '../db/endpoints.ts';
import { attemptDelivery, leaseMs, signingSecrets, type WorkerDeps } from '../worker.ts';

function caller(user: Identity | null): string {
  if (!user) throw new AppError('UNAUTHENTICATED', 'sign in first');
  return user.id;
}

/** The URL must pass the outbound guard now (and is checked again on every send). */
async function checkUrl(outbound: Outbound, url: string): Promise<string> {
  try {
    return (await outbound.check(url)).url.toString();
  } catch (err) {
    if (err instanceof OutboundError) throw new AppError('VALIDATION_FAILED', `invalid url: ${err.message}`, [{ path: 'body.url', message: err.message }]);
    throw err;
  }
}

/** Secrets are stored sealed under SECRETS_KEYRING; without it none can be stored. */
function sealSecret(config: Config, secret: string | null | undefined): string | null | undefined {
  if (secret === undefined || secret === null) return secret;
  const box = signingSecrets(config);
  if (!box.canSeal) {
    const message = 'cannot store a signing secret: the operator must set SECRETS_KEYRING (<id>:<64 hex characters>) to encrypt secrets at rest';
    throw new AppError('BAD_REQUEST', message, [{ path: 'body.secret', message }]);
  }
  return box.seal(secret);
}

/** A task event's payload about a made-up task, named `task.test` (the task's fields as a real event's). */
function testPayload(userId: string): Omit<TaskEventPayload, 'event'> & { event: 'task.test' } {
  const { payload } = taskEvent('task.created', { id: randomUUID(), userId, title: 'Test event', type: 'ONE_TIME', priority: 'NORMAL', createdAt: new Date() });
  return { ...payload, event: 'task.test' };
}

/** `onEnabled`: an endpoint was enabled, its waiting deliveries are due (the worker claims now rather than at its longest sleep). */
export function serveWebhookApi(deps: WorkerDeps & { bus: Bus; pool: Pool; onEnabled?: () => void }): Subscription[] {
  const { bus, pool, config, outbound } = deps;

  /** Send a delivery leased to this request now (one attempt) and return its log entry. */
  const sendNow = async (userId: string, endpointId: string, claimed: ClaimedDelivery | null, id: string) => {
    if (claimed) await attemptDelivery(deps, claimed);
    return deliveryView(await getDelivery(pool, userId, endpointId, id));
  };

  return [
    bus.serve(webhookApi.list.rpc, async ({ user }) => ({ webhooks: (await listEndpoints(pool, caller(user))).map(endpointView), limit: MAX_WEBHOOK_ENDPOINTS })),
    // the user's export (the endpoint as the API shows it: the secret only as hasSecret)
    bus.serve(exportWebhooksRpc, async ({ userId }) => ({ webhooks: (await listEndpoints(pool, userId)).map(endpointView) })),
    bus.serve(webhookApi.create.rpc, async ({ user, body }) => {
      const userId = caller(user);
      const url = await checkUrl(outbound, body.url);
      const secretEnc = sealSecret(config, body.secret) ?? null;
      const row = await inTransaction(pool, (c) => insertEndpoint(c, userId, { url, secretEnc, events: body.events, enabled: body.enabled }));
      return endpointView(row);
    }),
    bus.serve(webhookApi.get.rpc, async ({ user, params }) => endpointView(await getEndpoint(pool, caller(user), params.id))),
    bus.serve(webhookApi.update.rpc, async ({ user, params, body }) => {
      const userId = caller(user);
      await getEndpoint(pool, userId, params.id);
      const url = body.url === undefined ? undefined : await checkUrl(outbound, body.url);
      const secretEnc = sealSecret(config, body.secret);
      const updated = endpointView(await updateEndpoint(pool, userId, params.id, { url, secretEnc, events: body.events, enabled: body.enabled }));
      if (body.enabled === true) deps.onEnabled?.();
      return updated;
    }),
    bus.serve(webhookApi.remove.rpc, async ({ user, params }) => {
      await deleteEndpoint(pool, caller(user), params.id);
      return null;
    }),
    bus.serve(webhookApi.test.rpc, async ({ user, params }) => {
      const userId = caller(user);
      await getEndpoint(pool, userId, params.id);
      const claimed = await inTransaction(pool, (c) => insertTestDelivery(c, userId, params.id, JSON.stringify(testPayload(userId)), leaseMs(config)));
      return sendNow(userId, params.id, claimed, claimed.id);
    }),
    bus.serve(webhookApi.deliveries.rpc, async ({ user, params, query }) => {
      const userId = caller(user);
      await getEndpoint(pool, userId, params.id);
      return { deliveries: (await listDeliveries(pool, userId, params.id, query.limit)).map(deliveryView) };
    }),
    bus.serve(webhookApi.redeliver.rpc, async ({ user, params }) => {
      const userId = caller(user);
      await getEndpoint(pool, userId, params.id);
      const claimed = await requeue(pool, userId, params.id, params.deliveryId, leaseMs(config));
      return sendNow(userId, params.id, claimed, params.deliveryId);
    }),
  ];
}
