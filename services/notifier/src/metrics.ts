import { counter } from '@tasksvc/runtime';

/** Notification sends per channel (docs/observability.md): sent, retry (transient failure, tried again later) or failed (given up). */
export const notificationSends = counter('tasksvc_notifications_sent_total', 'Notification sends, by channel and outcome (sent, retry, failed).', ['channel', 'outcome']);
