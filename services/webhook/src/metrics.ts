import { counter, histogram } from '@tasksvc/runtime';

const deliveries = counter('tasksvc_webhook_deliveries_total', 'Webhook deliveries finished, by outcome: delivered, or failed (gave up, refused URL, 410 Gone).', ['outcome']);

/** Webhook delivery metrics (docs/observability.md). */
export const webhookMetrics = {
  attempts: histogram('tasksvc_webhook_delivery_attempt_duration_seconds', 'Webhook delivery attempts, by outcome (delivered, retry, failed, gone), with the time the receiver took.', ['outcome']),
  /** a delivery's recorded status after an attempt; `pending` (a retry is scheduled) is not a finish */
  finished(status: 'pending' | 'delivered' | 'failed'): void {
    if (status !== 'pending') deliveries.inc({ outcome: status });
  },
};
