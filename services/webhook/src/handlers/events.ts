import { TASK_EVENTS_FILTER, taskEvents } from '@tasksvc/proto';
import { detached, type Bus, type Pool, type Subscription } from '@tasksvc/runtime';
import { ingestEvent } from '../db/deliveries.ts';

/** Durable consumer name: replicas share it, and it survives restarts (JetStream keeps its position). */
export const WEBHOOK_CONSUMER = 'webhook-deliveries';

/**
 * Every task event (`events.task.>`) becomes one delivery row per matching endpoint, idempotently
 * keyed by (message id, endpoint). The message is acknowledged only after that commit, so a crash
 * before it redelivers the event and nothing is lost; the delivery worker does the sending.
 */
export async function consumeTaskEvents(deps: { bus: Bus; pool: Pool; onIngested: () => void }): Promise<Subscription> {
  // several pull loops on the one durable: events are ingested in parallel (each one idempotently)
  const subs = await Promise.all(Array.from({ length: INGEST_PARALLELISM }, () => consumeOnce(deps)));
  return {
    async stop() {
      await Promise.all(subs.map((s) => s.stop()));
    },
  };
}

/** Concurrent ingestion loops per process. */
export const INGEST_PARALLELISM = 4;

function consumeOnce(deps: { bus: Bus; pool: Pool; onIngested: () => void }): Promise<Subscription> {
  return deps.bus.consume(
    taskEvents['task.created'],
    async (msg, meta) => {
      const body = JSON.stringify(msg.payload);
      const added = await ingestEvent(deps.pool, { msgId: meta.msgId, userId: msg.userId, event: msg.payload.event, body });
      // the worker's rounds this wakes are its own, not this event's (each attempt joins its event's trace itself)
      if (added > 0) detached(deps.onIngested);
    },
    { durable: WEBHOOK_CONSUMER, filter: TASK_EVENTS_FILTER, ackWaitMs: 30_000 },
  );
}
