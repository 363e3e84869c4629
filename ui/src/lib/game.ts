import { createResource, createRoot } from 'solid-js';
import { ApiError, get } from './api.ts';
import { read } from './cache.ts';
import { connection, lastGood } from './connection.ts';
import { session } from './session.ts';
import { toast } from './toast.ts';
import type { StatsReply } from './types.ts';

/**
 * Announce what changed between two readings of the same user's stats: new achievements (by name,
 * with their reward) and a new level. The stats only count achievements, so the names come from
 * /api/achievements: the most recently unlocked ones, as many as the count grew.
 */
async function announceGains(before: StatsReply, after: StatsReply): Promise<void> {
  const parts: string[] = [];
  const gained = after.achievementsUnlocked - before.achievementsUnlocked;
  if (gained > 0) {
    try {
      const { achievements } = await get('/api/achievements');
      const newest = achievements.filter((a) => a.unlocked).sort((a, b) => (b.unlockedAt ?? '').localeCompare(a.unlockedAt ?? '')).slice(0, gained);
      parts.push(...newest.map((a) => `Achievement unlocked: ${a.title} (+${a.reward} coins)`));
    } catch {
      parts.push(gained === 1 ? 'Achievement unlocked' : `${gained} achievements unlocked`);
    }
  }
  if (after.level > before.level) parts.push(`Level up: you reached level ${after.level}!`);
  // One toast for all of it: a completion's Undo toast stays (at most two are shown at once).
  if (parts.length) toast(parts.join(' · '), { kind: 'info' });
}

/** Coins, level, streaks and completion counts (GET /api/stats), shared by the top bar, dashboard and progress. */
const shared = createRoot(() => {
  // The last reading and whose it was: only a change for the same user is news.
  let last: { user: string; stats: StatsReply } | undefined;
  // Read through `.latest` (see data.ts): refreshing the numbers never suspends the page.
  const [stats, { refetch }] = createResource<StatsReply | null | undefined, string>(session.ready, async (user) => {
    try {
      const now = await read('/api/stats');
      if (last?.user === user) void announceGains(last.stats, now);
      last = { user, stats: now };
      return now;
    } catch (err) {
      // Without the game API the rest of the app still works; the widgets hide themselves.
      if (err instanceof ApiError && (err.status === 404 || err.status >= 500)) return null;
      throw err;
    }
  }, { initialValue: undefined });
  connection.onReconnect(() => session.ready() && void refetch());
  return { stats: lastGood(stats), refetch };
});

export const gameStats = () => shared.stats();
export const refreshGame = () => void shared.refetch();

/**
 * "+N coins" for a completion: the change of the balance it reports, so coins from achievements the
 * completion unlocked count too (the reply's coinsEarned is the task's own share only).
 */
export function coinsGained(reply: { coinsEarned: number; coins: number }, before = gameStats()?.coins): number {
  return before === undefined ? reply.coinsEarned : Math.max(reply.coinsEarned, reply.coins - before);
}
