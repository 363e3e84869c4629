import { adminApi, adminRoutes } from './admin.ts';
import { authApi, authRoutes } from './auth.ts';
import { gameApi, gameRoutes } from './game.ts';
import type { AnyRoute } from './http.ts';
import { notifyApi, notifyRoutes } from './notify.ts';
import { reminderActionsApi, reminderRoutes } from './reminders.ts';
import { tasksApi, tasksRoutes } from './tasks.ts';
import { userDataApi, userDataRoutes } from './user-data.ts';
import { webhookApi, webhookRoutes } from './webhooks.ts';
import { importApi, importRoutes } from './user-import.ts';

/** Every HTTP route the gateway exposes. Each domain keeps its list in its own proto module. */
export const routes: AnyRoute[] = [...authRoutes, ...tasksRoutes, ...reminderRoutes, ...gameRoutes, ...notifyRoutes, ...webhookRoutes, ...userDataRoutes, ...adminRoutes, ...importRoutes];

type Values<T> = T[keyof T];
/**
 * The same table as a type: each route with its literal method and path and its body's and reply's
 * types. Typed clients import it type-only (the UI's lib/api.ts), so no zod reaches their bundle.
 */
export type ApiRoute =
  | Values<typeof authApi>
  | Values<typeof tasksApi>
  | Values<typeof reminderActionsApi>
  | Values<typeof gameApi>
  | Values<typeof notifyApi>
  | Values<typeof webhookApi>
  | Values<typeof userDataApi>
  | Values<typeof adminApi>
  | Values<typeof importApi>;
