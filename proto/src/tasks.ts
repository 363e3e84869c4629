import type { AnyRoute } from './http.ts';

/** HTTP routes of the tasks service (tasks, topics, iCal, profile settings). */
export const tasksRoutes: AnyRoute[] = [];
