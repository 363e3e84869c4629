import { notificationRequested } from '@tasksvc/proto';
import type { Bus, Logger, Subscription } from '@tasksvc/runtime';
import type { SenderDeps } from '../channels/channel.ts';
import { targetsFor } from '../channels/targets.ts';
import { deliver } from '../deliver.ts';

/** Durable consumer name shared by the notifier's replicas. */
export const NOTIFIER_CONSUMER = 'notifier-deliveries';

/**
 * Each notification request goes to every enabled channel of its user (HTTP Alert included). When
 * a channel fails transiently the handler throws, so the bus redelivers the request later (with
 * growing delays); channels already sent are skipped by their dedupe key.
 */
export async function consumeNotificationRequests(deps: SenderDeps & { bus: Bus; log: Logger }): Promise<Subscription> {
  // a few pull loops, so one slow peer does not hold up every other notification
  const subs = await Promise.all(Array.from({ length: CONSUME_PARALLELISM }, () => consumeOnce(deps)));
  return {
    async stop() {
      await Promise.all(subs.map((s) => s.stop()));
    },
  };
}

/** Concurrent request loops per process; the per-channel claim keeps them from sending twice. */
export const CONSUME_PARALLELISM = 4;

function consumeOnce(deps: SenderDeps & { bus: Bus; log: Logger }): Promise<Subscription> {
  return deps.bus.consume(
    notificationRequested,
    async (n) => {
      const targets = await targetsFor(deps, n.userId);
      const report = await deliver(deps.pool, deps.log, targets, n);
      if (report.retryLater) throw new Error(`notification ${n.dedupeKey} will be retried: ${report.errors.join('; ') || 'a channel is being sent elsewhere'}`);
    },
    { durable: NOTIFIER_CONSUMER, ackWaitMs: 60_000 },
  );
}
