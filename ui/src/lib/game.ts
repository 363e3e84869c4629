import { createResource, createRoot } from 'solid-js';
import { ApiError, get } from './api.ts';
import type { StatsReply } from './types.ts';

/** Coins, level, streaks and completion counts (GET /api/stats), shared by the top bar, dashboard and progress. */
const shared = createRoot(() => {
  const [stats, { refetch }] = createResource<StatsReply | null>(async () => {
    try {
      return await get<StatsReply>('/api/stats');
    } catch (err) {
      // Without the game API the rest of the app still works; the widgets hide themselves.
      if (err instanceof ApiError && (err.status === 404 || err.status >= 500)) return null;
      throw err;
    }
  });
  return { stats, refetch };
});

export const gameStats = shared.stats;
export const refreshGame = () => void shared.refetch();
