import { describe, expect, it } from 'vitest';
import { ACHIEVEMENTS, capOf, evaluateAchievements, RARITY_REWARD, thresholdsOf, type AchievementStats, type CompletionContext } from './achievements.ts';
import { coinsAfterUndo, completionCoins, levelForCoins, levelProgress, LEVEL_THRESHOLDS } from './levels.ts';

const ZERO: AchievementStats = {
  tasksCompleted: 0,
  streakMax: 0,
  coins: 0,
  coinsEarned: 0,
  questStreakMax: 0,
  questsCompleted: 0,
  topicsCreated: 0,
  sequentialTopics: 0,
  highPriorityCompleted: 0,
  wishlistPurchases: 0,
  energyCheckinStreak: 0,
};
const NOON: CompletionContext = { localHour: 12, questsCompletedToday: 0 };
const keys = (stats: Partial<AchievementStats>, ctx: CompletionContext | null = NOON, have: string[] = []) =>
  evaluateAchievements({ ...ZERO, ...stats }, new Set(have), ctx).map((u) => u.key);

describe('achievement definitions', () => {
  it('has 31 definitions with unique keys and rarity rewards 10/25/50/100', () => {
    expect(ACHIEVEMENTS).toHaveLength(31);
    expect(new Set(ACHIEVEMENTS.map((a) => a.key)).size).toBe(31);
    expect(RARITY_REWARD).toEqual({ common: 10, rare: 25, epic: 50, legendary: 100 });
    expect(ACHIEVEMENTS.filter((a) => a.secret).map((a) => a.key).sort()).toEqual(['double_shift', 'early_bird', 'night_owl']);
  });
  it('unlocks nothing from nothing', () => {
    expect(keys({})).toEqual([]);
  });
});

describe('achievement triggers', () => {
  const cases: [string, Partial<AchievementStats>, Partial<AchievementStats>][] = [
    ['tasks_1', { tasksCompleted: 1 }, { tasksCompleted: 0 }],
    ['tasks_10', { tasksCompleted: 10 }, { tasksCompleted: 9 }],
    ['tasks_50', { tasksCompleted: 50 }, { tasksCompleted: 49 }],
    ['tasks_100', { tasksCompleted: 100 }, { tasksCompleted: 99 }],
    ['tasks_200', { tasksCompleted: 200 }, { tasksCompleted: 199 }],
    ['tasks_500', { tasksCompleted: 500 }, { tasksCompleted: 499 }],
    ['tasks_1000', { tasksCompleted: 1000 }, { tasksCompleted: 999 }],
    ['streak_3', { streakMax: 3 }, { streakMax: 2 }],
    ['streak_7', { streakMax: 7 }, { streakMax: 6 }],
    ['streak_14', { streakMax: 14 }, { streakMax: 13 }],
    ['streak_30', { streakMax: 30 }, { streakMax: 29 }],
    ['streak_60', { streakMax: 60 }, { streakMax: 59 }],
    ['streak_100', { streakMax: 100 }, { streakMax: 99 }],
    ['streak_365', { streakMax: 365 }, { streakMax: 364 }],
    ['coins_100', { coins: 100 }, { coins: 99 }],
    ['coins_500', { coins: 500 }, { coins: 499 }],
    ['level_5', { coinsEarned: 500 }, { coinsEarned: 499 }],
    ['level_10', { coinsEarned: 3000 }, { coinsEarned: 2999 }],
    ['first_quest', { questsCompleted: 1 }, { questsCompleted: 0 }],
    ['quest_streak_7', { questStreakMax: 7 }, { questStreakMax: 6 }],
    ['quest_streak_30', { questStreakMax: 30 }, { questStreakMax: 29 }],
    ['topics_1', { topicsCreated: 1 }, { topicsCreated: 0 }],
    ['topics_5', { topicsCreated: 5 }, { topicsCreated: 4 }],
    ['sequential_topic', { sequentialTopics: 1 }, { sequentialTopics: 0 }],
    ['first_high_priority', { highPriorityCompleted: 1 }, { highPriorityCompleted: 0 }],
    ['wishlist_1', { wishlistPurchases: 1 }, { wishlistPurchases: 0 }],
    ['wishlist_10', { wishlistPurchases: 10 }, { wishlistPurchases: 9 }],
    ['energy_streak_7', { energyCheckinStreak: 7 }, { energyCheckinStreak: 6 }],
  ];
  it.each(cases)('%s unlocks at its threshold and not one below', (key, at, below) => {
    // Hold everything else as already unlocked so only the threshold under test can fire.
    const others = ACHIEVEMENTS.map((a) => a.key).filter((k) => k !== key);
    expect(keys(at, NOON, others)).toEqual([key]);
    expect(keys(below, NOON, others)).toEqual([]);
  });

  it('night_owl at local hour 23, not at 22', () => {
    expect(keys({}, { localHour: 23, questsCompletedToday: 0 })).toEqual(['night_owl']);
    expect(keys({}, { localHour: 22, questsCompletedToday: 0 })).toEqual([]);
  });
  it('early_bird before 07:00 local, not at 07', () => {
    expect(keys({}, { localHour: 6, questsCompletedToday: 0 })).toEqual(['early_bird']);
    expect(keys({}, { localHour: 7, questsCompletedToday: 0 })).toEqual([]);
  });
  it('double_shift at the second quest of one day', () => {
    expect(keys({}, { localHour: 12, questsCompletedToday: 2 })).toEqual(['double_shift']);
    expect(keys({}, { localHour: 12, questsCompletedToday: 1 })).toEqual([]);
  });
  it('never grants a secret achievement retroactively', () => {
    expect(keys({ tasksCompleted: 1 }, null)).toEqual(['tasks_1']);
  });
  it('is idempotent: an unlocked achievement is not returned again', () => {
    expect(keys({ tasksCompleted: 10 }, NOON, ['tasks_1'])).toEqual(['tasks_10']);
  });
  it('a level milestone counts what was earned, not the balance left after spending', () => {
    const others = ACHIEVEMENTS.map((a) => a.key).filter((k) => k !== 'level_5');
    expect(keys({ coins: 20, coinsEarned: 520 }, NOON, others)).toEqual(['level_5']);
    expect(keys({ coins: 600, coinsEarned: 499 }, NOON, others)).toEqual([]);
  });
  it('lets achievement rewards cascade into coin and level milestones', () => {
    // 95 coins + tasks_1 (10) crosses 100 → coins_100 (+10)
    const r = evaluateAchievements({ ...ZERO, coins: 95, tasksCompleted: 1 }, new Set(), NOON);
    expect(r).toEqual([
      { key: 'tasks_1', reward: 10 },
      { key: 'coins_100', reward: 10 },
    ]);
  });
});

describe('counts capped where the rules stop looking (db/achievements.ts)', () => {
  const CAPPED = ['tasksCompleted', 'questsCompleted', 'highPriorityCompleted'] as const;
  it('has the thresholds of the milestones', () => {
    expect(thresholdsOf('tasksCompleted').map((t) => t.atLeast)).toEqual([1, 10, 50, 100, 200, 500, 1000]);
    expect(thresholdsOf('questsCompleted')).toEqual([{ key: 'first_quest', atLeast: 1 }]);
    expect(thresholdsOf('highPriorityCompleted')).toEqual([{ key: 'first_high_priority', atLeast: 1 }]);
    expect(capOf('tasksCompleted', new Set(['tasks_1', 'tasks_1000']))).toBe(500);
    expect(capOf('tasksCompleted', new Set(thresholdsOf('tasksCompleted').map((t) => t.key)))).toBe(0);
  });
  it.each(CAPPED)('%s: a count capped at the highest threshold still locked unlocks exactly what the whole count does', (stat) => {
    const locks = thresholdsOf(stat).map((t) => t.key);
    // every set of unlocked milestones on the stat (2^7 for the tasks), every value around each threshold
    const values = [...new Set([0, 5_000, ...thresholdsOf(stat).flatMap((t) => [t.atLeast - 1, t.atLeast, t.atLeast + 1])])];
    for (let mask = 0; mask < 1 << locks.length; mask++) {
      const have = locks.filter((_, i) => mask & (1 << i));
      const cap = capOf(stat, new Set(have));
      for (const v of values) expect(keys({ [stat]: Math.min(v, cap) }, NOON, have), `${stat} ${v}, unlocked ${have.join(',')}`).toEqual(keys({ [stat]: v }, NOON, have));
    }
  });
});

describe('coins and levels', () => {
  it('has the ten thresholds', () => {
    expect(LEVEL_THRESHOLDS).toEqual([0, 50, 150, 300, 500, 800, 1200, 1700, 2300, 3000]);
    for (const [i, t] of LEVEL_THRESHOLDS.entries()) {
      expect(levelForCoins(t)).toBe(i + 1);
      if (t > 0) expect(levelForCoins(t - 1)).toBe(i);
    }
    expect(levelForCoins(99_999)).toBe(10);
    expect(levelProgress(160)).toEqual({ level: 3, coins: 160, levelStart: 150, nextLevelAt: 300 });
    expect(levelProgress(3000).nextLevelAt).toBeNull();
  });
  it('doubles the reward at three postponements', () => {
    expect(completionCoins(5, 2)).toBe(5);
    expect(completionCoins(5, 3)).toBe(10);
  });
  it('undo subtracts exactly what the completion awarded (double bonus included), floored at 0', () => {
    for (const [value, postpones] of [[1, 0], [5, 3], [7, 9]] as const) {
      const before = 40;
      const awarded = completionCoins(value, postpones);
      expect(coinsAfterUndo(before + awarded, awarded)).toBe(before);
    }
    expect(coinsAfterUndo(3, 10)).toBe(0);
  });
});
