import type { WebhookFigures } from '@tasksvc/proto';
import { countSamples, counter, histogram, sum } from '@tasksvc/runtime';

const deliveries = counter('tasksvc_webhook_deliveries_total', 'Webhook deliveries finished, by outcome: delivered, or failed (gave up, refused URL, 410 Gone).', ['outcome']);
const attempts = histogram('tasksvc_webhook_delivery_attempt_duration_seconds', 'Webhook delivery attempts, by outcome (delivered, retry, failed, gone), with the time the receiver took.', ['outcome']);
// Each series exists from the start at 0, so rate() and increase() count the first event of the
// process's life too (a series that first appears at 1 shows no increase).
for (const outcome of ['delivered', 'failed']) deliveries.inc({ outcome }, 0);
for (const outcome of ['delivered', 'retry', 'failed', 'gone']) attempts.zero({ outcome });

/** Webhook delivery metrics (docs/observability.md). */
export const webhookMetrics = {
  attempts,
  /** a delivery's recorded status after an attempt; `pending` (a retry is scheduled) is not a finish */
  finished(status: 'pending' | 'delivered' | 'failed'): void {
    if (status !== 'pending') deliveries.inc({ outcome: status });
  },
  /** the admin page's part, from the same counters */
  async figures(): Promise<WebhookFigures> {
    const [finished, tried] = await Promise.all([countSamples(deliveries), countSamples(attempts)]);
    return {
      delivered: sum(finished, (l) => l.outcome === 'delivered'),
      failed: sum(finished, (l) => l.outcome === 'failed'),
      retried: sum(tried, (l) => l.outcome === 'retry'),
    };
  },
};
