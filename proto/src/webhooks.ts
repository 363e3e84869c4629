import type { AnyRoute } from './http.ts';

/** HTTP routes of the webhook service (task-event endpoints and their delivery log). */
export const webhookRoutes: AnyRoute[] = [];
