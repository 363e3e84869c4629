import { createResource, createRoot } from 'solid-js';
import { ApiError, get } from './api.ts';

export interface GameSummary {
  coins: number;
  level: number;
  streak: number;
}

/** Coins, level and streak for the top bar; absent (null) while the game API is unavailable. */
const shared = createRoot(() => {
  const [summary, { refetch }] = createResource<GameSummary | null>(async () => {
    try {
      return await get<GameSummary>('/api/game/summary');
    } catch (err) {
      if (err instanceof ApiError && (err.status === 404 || err.status >= 500)) return null;
      throw err;
    }
  });
  return { summary, refetch };
});

export const gameSummary = shared.summary;
export const refreshGame = () => void shared.refetch();
