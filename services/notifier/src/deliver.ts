import type { NotificationRequest } from '@tasksvc/proto';
import type { Logger, Pool } from '@tasksvc/runtime';
import type { Target } from './channels/channel.ts';
import { claimDelivery, finishDelivery } from './db/store.ts';
import { MAX_ATTEMPTS } from './domain/messages.ts';
import { notificationSends } from './metrics.ts';

export interface DeliveryReport {
  sent: number;
  failed: number;
  /** some target failed transiently (or is being sent elsewhere): the request must come again */
  retryLater: boolean;
  errors: string[];
}

/**
 * Send one notification to the given targets, each at most once per dedupe key (the delivery row's
 * unique key). Transient failures leave the row `retrying` until MAX_ATTEMPTS; test sends get one try.
 */
export async function deliver(pool: Pool, log: Logger, targets: Target[], n: NotificationRequest, opts: { test?: boolean } = {}): Promise<DeliveryReport> {
  const report: DeliveryReport = { sent: 0, failed: 0, retryLater: false, errors: [] };
  await Promise.all(
    targets.map(async (t) => {
      const claim = await claimDelivery(pool, { userId: n.userId, dedupeKey: n.dedupeKey, channel: t.channel, target: t.target, title: n.title, tag: n.tag, test: opts.test });
      if (claim.kind === 'done') return;
      if (claim.kind === 'busy') {
        report.retryLater = true;
        return;
      }
      const outcome = await t.send(n).catch((err: unknown) => ({ kind: 'retry' as const, error: (err as Error).message }));
      if (outcome.kind === 'sent') {
        report.sent++;
        notificationSends.inc({ channel: t.channel, outcome: 'sent' });
        await finishDelivery(pool, claim.id, 'sent', null);
        return;
      }
      report.errors.push(`${t.channel}: ${outcome.error}`);
      const again = outcome.kind === 'retry' && !opts.test && claim.attempts < MAX_ATTEMPTS;
      if (again) report.retryLater = true;
      else report.failed++;
      notificationSends.inc({ channel: t.channel, outcome: again ? 'retry' : 'failed' });
      log.warn({ channel: t.channel, dedupeKey: n.dedupeKey, attempt: claim.attempts, error: outcome.error, retry: again }, 'notification delivery failed');
      await finishDelivery(pool, claim.id, again ? 'retrying' : 'failed', outcome.error);
    }),
  );
  return report;
}
