import type { AnyRoute } from './http.ts';

/** HTTP routes of the game rules (daily quest, streaks, achievements, review, stats) and cron. */
export const gameRoutes: AnyRoute[] = [];
