import { MAX_WEBHOOK_ENDPOINTS, TASK_EVENTS_FILTER, taskEvents } from '@tasksvc/proto';
import { createBatcher, currentTraceparent, detached, type Bus, type Pool, type Subscription } from '@tasksvc/runtime';
import { ingestEvents, type IngestedEvent } from '../db/deliveries.ts';

/** Durable consumer name: replicas share it, and it survives restarts (JetStream keeps its position). */
export const WEBHOOK_CONSUMER = 'webhook-deliveries';

/**
 * Every task event (`events.task.>`) becomes one delivery row per matching endpoint, idempotently
 * keyed by (message id, endpoint). The message is acknowledged only after that commit, so a crash
 * before it redelivers the event and nothing is lost; the delivery worker does the sending.
 *
 * The pull loops hand their events to one batcher, all events of a message at once: the events
 * arriving while a statement runs are stored together by the next one (a statement round trip per
 * event was most of ingestion's cost).
 */
export async function consumeTaskEvents(deps: { bus: Bus; pool: Pool; /** deliveries were added, for these receiving hosts */ onIngested: (hosts: readonly string[]) => void }): Promise<Subscription> {
  /** deliveries the latest event of each user added (how much storing one of theirs costs); bounded */
  const fanOut = new Map<string, number>();
  // fair between users: one user's burst (a bulk action of 200 tasks to 10 endpoints) goes out in
  // statements of about INGEST_ROWS rows, and another user's event waits for the one running at most
  const batcher = createBatcher((events: IngestedEvent[]) => ingestEvents(deps.pool, events), INGEST_BATCH, {
    key: (e) => e.userId,
    // a user not seen yet may have every endpoint there can be
    weight: (e) => fanOut.get(e.userId) ?? MAX_WEBHOOK_ENDPOINTS,
    maxWeight: INGEST_ROWS,
  });
  const subs = await Promise.all(
    Array.from({ length: INGEST_PARALLELISM }, () =>
      deps.bus.consume(
        taskEvents['task.created'],
        async (msg, meta) => {
          // the event keeps this consumer's trace context, for its delivery attempts
          const { added, hosts } = await batcher.add({ msgId: meta.msgId, userId: msg.userId, event: msg.payload.event, body: JSON.stringify(msg.payload), traceparent: currentTraceparent() });
          if (fanOut.size >= 10_000) fanOut.clear();
          fanOut.set(msg.userId, Math.max(1, added));
          // the worker's rounds this wakes are its own, not this event's (each attempt joins its event's trace itself)
          if (added > 0) detached(() => deps.onIngested(hosts));
        },
        { durable: WEBHOOK_CONSUMER, filter: TASK_EVENTS_FILTER, ackWaitMs: 30_000, concurrency: INGEST_BATCH },
      ),
    ),
  );
  return {
    async stop() {
      await Promise.all(subs.map((s) => s.stop()));
    },
  };
}

/** Concurrent pull loops per process: each awaits its event's commit, so this bounds the batch size. */
export const INGEST_PARALLELISM = 16;
/** Events per ingest statement at most. */
const INGEST_BATCH = 64;
/**
 * Delivery rows per ingest statement, about (by each user's latest fan-out): 640 rows (64 events to
 * 10 endpoints) took 100-160 ms on the loaded bench machine, and every other user's event waited.
 */
const INGEST_ROWS = 128;
