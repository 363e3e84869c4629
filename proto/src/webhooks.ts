import { z } from 'zod';
import { defineRoute, type AnyRoute } from './http.ts';
import { TASK_EVENT_NAMES, taskEventName } from './task-fields.ts';

/** At most this many task-event endpoints per user (the spec's limit). */
export const MAX_WEBHOOK_ENDPOINTS = 10;

/** Event names a delivery can carry: the four task events plus the synthetic test event. */
export const WEBHOOK_DELIVERY_EVENTS = [...TASK_EVENT_NAMES, 'task.test'] as const;

/** The headers every task-event delivery carries (docs/webhooks.md). */
export const WEBHOOK_HEADERS = {
  signature: 'X-Service-Signature',
  event: 'X-Service-Event',
  delivery: 'X-Service-Delivery',
} as const;

const webhookUrl = z.string().trim().min(1, 'is required').max(2048, 'must be at most 2048 characters');
const webhookSecret = z.string().min(8, 'must be at least 8 characters').max(256, 'must be at most 256 characters');
const eventFilter = z
  .array(taskEventName)
  .max(TASK_EVENT_NAMES.length)
  .refine((a) => new Set(a).size === a.length, 'must not repeat an event');

export const webhookEndpoint = z.object({
  id: z.uuid(),
  url: z.string(),
  /** empty means every task event */
  events: z.array(taskEventName),
  hasSecret: z.boolean(),
  enabled: z.boolean(),
  /** why the service disabled it (410 Gone, failing too long), null when enabled or disabled by the user */
  disabledReason: z.string().nullable(),
  /** first failure since the last success, null while healthy */
  failingSince: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type WebhookEndpoint = z.infer<typeof webhookEndpoint>;

export const webhookDelivery = z.object({
  id: z.uuid(),
  endpointId: z.uuid(),
  event: z.enum(WEBHOOK_DELIVERY_EVENTS),
  /** pending: waiting for its next attempt; delivered: a 2xx answer; failed: given up */
  status: z.enum(['pending', 'delivered', 'failed']),
  attempts: z.number().int(),
  responseStatus: z.number().int().nullable(),
  error: z.string().nullable(),
  durationMs: z.number().int().nullable(),
  createdAt: z.string(),
  lastAttemptAt: z.string().nullable(),
  nextAttemptAt: z.string().nullable(),
  deliveredAt: z.string().nullable(),
});
export type WebhookDelivery = z.infer<typeof webhookDelivery>;

const idParam = z.object({ id: z.uuid() }).strict();
const deliveryParam = z.object({ id: z.uuid(), deliveryId: z.uuid() }).strict();

export const webhookApi = {
  list: defineRoute({
    method: 'GET',
    path: '/api/settings/webhooks',
    auth: 'user',
    subject: 'webhook.http.list',
    response: z.object({ webhooks: z.array(webhookEndpoint), limit: z.number().int() }),
    summary: 'Task-event webhook endpoints of the caller',
    tag: 'webhooks',
  }),
  create: defineRoute({
    method: 'POST',
    path: '/api/settings/webhooks',
    auth: 'user',
    subject: 'webhook.http.create',
    body: z
      .object({
        url: webhookUrl,
        secret: webhookSecret.nullable().optional(),
        events: eventFilter.default([]),
        enabled: z.boolean().default(true),
      })
      .strict(),
    response: webhookEndpoint,
    summary: 'Add an endpoint (at most 10; HTTPS; optional signing secret; empty event filter = all events)',
    tag: 'webhooks',
  }),
  get: defineRoute({
    method: 'GET',
    path: '/api/settings/webhooks/:id',
    auth: 'user',
    subject: 'webhook.http.get',
    params: idParam,
    response: webhookEndpoint,
    summary: 'One endpoint',
    tag: 'webhooks',
  }),
  update: defineRoute({
    method: 'PATCH',
    path: '/api/settings/webhooks/:id',
    auth: 'user',
    subject: 'webhook.http.update',
    params: idParam,
    body: z
      .object({
        url: webhookUrl.optional(),
        /** null removes the secret */
        secret: webhookSecret.nullable().optional(),
        events: eventFilter.optional(),
        /** true re-enables an endpoint the service disabled */
        enabled: z.boolean().optional(),
      })
      .strict(),
    response: webhookEndpoint,
    summary: 'Change an endpoint',
    tag: 'webhooks',
  }),
  remove: defineRoute({
    method: 'DELETE',
    path: '/api/settings/webhooks/:id',
    auth: 'user',
    subject: 'webhook.http.delete',
    params: idParam,
    status: 204,
    response: z.null(),
    summary: 'Delete an endpoint and its delivery log',
    tag: 'webhooks',
  }),
  test: defineRoute({
    method: 'POST',
    path: '/api/settings/webhooks/:id/test',
    auth: 'user',
    subject: 'webhook.http.test',
    params: idParam,
    status: 200,
    response: webhookDelivery,
    summary: 'Send a synthetic task.test event now (one attempt) and return its log entry',
    tag: 'webhooks',
  }),
  deliveries: defineRoute({
    method: 'GET',
    path: '/api/settings/webhooks/:id/deliveries',
    auth: 'user',
    subject: 'webhook.http.deliveries',
    params: idParam,
    query: z.object({ limit: z.coerce.number().int().min(1).max(100).default(50) }).strict(),
    response: z.object({ deliveries: z.array(webhookDelivery) }),
    summary: 'Delivery log of an endpoint, newest first',
    tag: 'webhooks',
  }),
  redeliver: defineRoute({
    method: 'POST',
    path: '/api/settings/webhooks/:id/deliveries/:deliveryId/redeliver',
    auth: 'user',
    subject: 'webhook.http.redeliver',
    params: deliveryParam,
    status: 200,
    response: webhookDelivery,
    summary: 'Queue a logged delivery again (same body and delivery id)',
    tag: 'webhooks',
  }),
};

/** HTTP routes of the webhook service (task-event endpoints and their delivery log). */
export const webhookRoutes: AnyRoute[] = Object.values(webhookApi);
