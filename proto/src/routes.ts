import { adminRoutes } from './admin.ts';
import { authRoutes } from './auth.ts';
import { gameRoutes } from './game.ts';
import type { AnyRoute } from './http.ts';
import { notifyRoutes } from './notify.ts';
import { reminderRoutes } from './reminders.ts';
import { tasksRoutes } from './tasks.ts';
import { userDataRoutes } from './user-data.ts';
import { webhookRoutes } from './webhooks.ts';
import { importRoutes } from './user-import.ts';

/** Every HTTP route the gateway exposes. Each domain keeps its list in its own proto module. */
export const routes: AnyRoute[] = [...authRoutes, ...tasksRoutes, ...reminderRoutes, ...gameRoutes, ...notifyRoutes, ...webhookRoutes, ...userDataRoutes, ...adminRoutes, ...importRoutes];
