import { levelForCoins } from './levels.ts';

export type Rarity = 'common' | 'rare' | 'epic' | 'legendary';

/** Coins an unlock is worth, by rarity (reference §7); booked apart from task coins. */
export const RARITY_REWARD: Record<Rarity, number> = { common: 10, rare: 25, epic: 50, legendary: 100 };

/** Everything the triggers look at, as of just after the event being evaluated. */
export interface AchievementStats {
  /**
   * tasks completed. Like questsCompleted and highPriorityCompleted, a read may stop counting at the
   * highest threshold of it not yet unlocked (capOf): the rules cannot tell the difference.
   */
  tasksCompleted: number;
  /** best streak ever (a milestone reached once stays reached) */
  streakMax: number;
  /** the balance */
  coins: number;
  /** earned over time: the level's measure */
  coinsEarned: number;
  questStreakMax: number;
  questsCompleted: number;
  topicsCreated: number;
  sequentialTopics: number;
  highPriorityCompleted: number;
  wishlistPurchases: number;
  energyCheckinStreak: number;
}

/** Facts about the one completion that triggered an evaluation (the secret achievements). */
export interface CompletionContext {
  /** local hour of the completion in the user's timezone, 0–23 */
  localHour: number;
  /** daily quests completed on that local day, this one included */
  questsCompletedToday: number;
}

export interface AchievementDef {
  key: string;
  title: string;
  description: string;
  rarity: Rarity;
  secret: boolean;
  /** ordering and grouping in the UI */
  category: 'tasks' | 'streak' | 'coins' | 'level' | 'quest' | 'topics' | 'priority' | 'wishlist' | 'energy' | 'secret';
  met(stats: AchievementStats, ctx: CompletionContext | null): boolean;
  /** a milestone on one figure: met is exactly `stats[stat] >= atLeast` */
  threshold?: { stat: keyof AchievementStats; atLeast: number };
}

const milestone = (
  category: AchievementDef['category'],
  key: string,
  title: string,
  description: string,
  rarity: Rarity,
  value: keyof AchievementStats | ((s: AchievementStats) => number),
  target: number,
): AchievementDef =>
  typeof value === 'string'
    ? { key, title, description, rarity, secret: false, category, met: (s) => s[value] >= target, threshold: { stat: value, atLeast: target } }
    : { key, title, description, rarity, secret: false, category, met: (s) => value(s) >= target };

const tasks = (n: number, title: string, rarity: Rarity) => milestone('tasks', `tasks_${n}`, title, `Complete ${n} task${n === 1 ? '' : 's'}`, rarity, 'tasksCompleted', n);
const streak = (n: number, title: string, rarity: Rarity) => milestone('streak', `streak_${n}`, title, `Reach a ${n}-day streak`, rarity, 'streakMax', n);

/** The 31 definitions. Keys are stable: they are stored in user_achievements. */
export const ACHIEVEMENTS: readonly AchievementDef[] = [
  tasks(1, 'First Step', 'common'),
  tasks(10, 'Getting Going', 'common'),
  tasks(50, 'Productive', 'rare'),
  tasks(100, 'Centurion', 'rare'),
  tasks(200, 'Taskmaster', 'epic'),
  tasks(500, 'Unstoppable', 'epic'),
  tasks(1000, 'Legend', 'legendary'),
  streak(3, 'Warming Up', 'common'),
  streak(7, 'One Week Strong', 'common'),
  streak(14, 'Fortnight', 'rare'),
  streak(30, 'Monthly Habit', 'rare'),
  streak(60, 'Two Months', 'epic'),
  streak(100, 'Triple Digits', 'epic'),
  streak(365, 'Year of Focus', 'legendary'),
  milestone('coins', 'coins_100', 'Saver', 'Hold 100 coins', 'common', 'coins', 100),
  milestone('coins', 'coins_500', 'Treasurer', 'Hold 500 coins', 'rare', 'coins', 500),
  milestone('level', 'level_5', 'Halfway There', 'Reach level 5', 'rare', (s) => levelForCoins(s.coinsEarned), 5),
  milestone('level', 'level_10', 'Max Level', 'Reach level 10', 'legendary', (s) => levelForCoins(s.coinsEarned), 10),
  milestone('quest', 'first_quest', 'Quest Accepted', 'Complete your first daily quest', 'common', 'questsCompleted', 1),
  milestone('quest', 'quest_streak_7', 'Questing Week', 'Complete the daily quest 7 days in a row', 'rare', 'questStreakMax', 7),
  milestone('quest', 'quest_streak_30', 'Quest Devotee', 'Complete the daily quest 30 days in a row', 'epic', 'questStreakMax', 30),
  milestone('topics', 'topics_1', 'Organizer', 'Create a topic', 'common', 'topicsCreated', 1),
  milestone('topics', 'topics_5', 'Architect', 'Create 5 topics', 'common', 'topicsCreated', 5),
  milestone('topics', 'sequential_topic', 'Step by Step', 'Create a sequential topic', 'common', 'sequentialTopics', 1),
  milestone('priority', 'first_high_priority', 'First Things First', 'Complete a high-priority task', 'common', 'highPriorityCompleted', 1),
  milestone('wishlist', 'wishlist_1', 'Treat Yourself', 'Buy a wishlist item', 'common', 'wishlistPurchases', 1),
  milestone('wishlist', 'wishlist_10', 'Big Spender', 'Buy 10 wishlist items', 'rare', 'wishlistPurchases', 10),
  milestone('energy', 'energy_streak_7', 'Self-Aware', 'Check in your energy 7 days in a row', 'rare', 'energyCheckinStreak', 7),
  {
    key: 'night_owl',
    title: 'Night Owl',
    description: 'Complete a task at 23:00 or later',
    rarity: 'rare',
    secret: true,
    category: 'secret',
    met: (_s, ctx) => ctx !== null && ctx.localHour >= 23,
  },
  {
    key: 'early_bird',
    title: 'Early Bird',
    description: 'Complete a task before 07:00',
    rarity: 'rare',
    secret: true,
    category: 'secret',
    met: (_s, ctx) => ctx !== null && ctx.localHour < 7,
  },
  {
    key: 'double_shift',
    title: 'Double Shift',
    // With one quest a day (a completed quest cannot be re-rolled), the second is yesterday's, caught up.
    description: "Complete today's quest and catch up on yesterday's on the same day",
    rarity: 'epic',
    secret: true,
    category: 'secret',
    met: (_s, ctx) => ctx !== null && ctx.questsCompletedToday >= 2,
  },
];

/**
 * The milestones on `stat`, each its key and threshold. A count of `stat` that stops at the highest
 * threshold whose achievement is not unlocked yet (0 once all are) unlocks exactly what the whole count
 * would, as long as no other rule reads `stat` (achievements.test.ts checks that for the counts
 * db/achievements.ts caps): it reads a user's completions so, however long their history.
 */
export function thresholdsOf(stat: keyof AchievementStats): { key: string; atLeast: number }[] {
  return ACHIEVEMENTS.flatMap((a) => (a.threshold?.stat === stat ? [{ key: a.key, atLeast: a.threshold.atLeast }] : []));
}

/** Where a count of `stat` may stop for a user who unlocked `unlocked` (what db/achievements.ts computes in SQL). */
export function capOf(stat: keyof AchievementStats, unlocked: ReadonlySet<string>): number {
  return Math.max(0, ...thresholdsOf(stat).flatMap((t) => (unlocked.has(t.key) ? [] : [t.atLeast])));
}

export const ACHIEVEMENT_BY_KEY: ReadonlyMap<string, AchievementDef> = new Map(ACHIEVEMENTS.map((a) => [a.key, a]));

export interface Unlock {
  key: string;
  reward: number;
}

/**
 * Which achievements the user newly earns. Rewards raise the coin balance, which can in turn meet
 * a coins or level milestone, so evaluation repeats until nothing new unlocks. `ctx` is null for a
 * retroactive grant, which never awards the secret achievements (they describe one moment).
 */
export function evaluateAchievements(stats: AchievementStats, unlocked: ReadonlySet<string>, ctx: CompletionContext | null): Unlock[] {
  const have = new Set(unlocked);
  const out: Unlock[] = [];
  let coins = stats.coins;
  let coinsEarned = stats.coinsEarned;
  for (;;) {
    const fresh = ACHIEVEMENTS.filter((a) => !have.has(a.key) && !(a.secret && ctx === null) && a.met({ ...stats, coins, coinsEarned }, ctx));
    if (fresh.length === 0) return out;
    for (const a of fresh) {
      have.add(a.key);
      const reward = RARITY_REWARD[a.rarity];
      coins += reward;
      coinsEarned += reward;
      out.push({ key: a.key, reward });
    }
  }
}
