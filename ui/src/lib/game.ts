import { createResource, createRoot } from 'solid-js';
import { ApiError, get } from './api.ts';
import { session } from './session.ts';
import type { StatsReply } from './types.ts';

/** Coins, level, streaks and completion counts (GET /api/stats), shared by the top bar, dashboard and progress. */
const shared = createRoot(() => {
  // Read through `.latest` (see data.ts): refreshing the numbers never suspends the page.
  const [stats, { refetch }] = createResource<StatsReply | null | undefined, string>(session.ready, async () => {
    try {
      return await get<StatsReply>('/api/stats');
    } catch (err) {
      // Without the game API the rest of the app still works; the widgets hide themselves.
      if (err instanceof ApiError && (err.status === 404 || err.status >= 500)) return null;
      throw err;
    }
  }, { initialValue: undefined });
  return { stats, refetch };
});

export const gameStats = () => shared.stats.latest;
export const refreshGame = () => void shared.refetch();
