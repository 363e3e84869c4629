/**
 * Coins earned for levels 1…10 (reference §6). The level is always derived, never stored, and from
 * what was EARNED over time, never from the balance: spending coins on a wish never lowers it.
 */
export const LEVEL_THRESHOLDS = [0, 50, 150, 300, 500, 800, 1200, 1700, 2300, 3000] as const;
export const MAX_LEVEL = LEVEL_THRESHOLDS.length;

export function levelForCoins(earned: number): number {
  const coins = earned;
  let level = 1;
  for (let i = 0; i < LEVEL_THRESHOLDS.length; i++) if (coins >= LEVEL_THRESHOLDS[i]!) level = i + 1;
  return level;
}

export interface LevelProgress {
  level: number;
  /** coins earned over time */
  coins: number;
  /** coins at which the current level started */
  levelStart: number;
  /** coins needed for the next level; null at the top level */
  nextLevelAt: number | null;
}

/** Where `earned` stands between its level's threshold and the next. */
export function levelProgress(earned: number): LevelProgress {
  const level = levelForCoins(earned);
  return { level, coins: earned, levelStart: LEVEL_THRESHOLDS[level - 1]!, nextLevelAt: level < MAX_LEVEL ? LEVEL_THRESHOLDS[level]! : null };
}

/** Postponing a task three or more times doubles its reward: finishing what you kept pushing away. */
export const DOUBLE_BONUS_POSTPONES = 3;

/** Coins a completion earns; the tasks service records this amount on the completion row. */
export function completionCoins(coinValue: number, postponeCount: number): number {
  return postponeCount >= DOUBLE_BONUS_POSTPONES ? coinValue * 2 : coinValue;
}

/**
 * The balance after undoing a completion: subtract exactly what that completion awarded (double
 * bonus included, unlike the reference), floored at 0 because coins may already have been spent.
 */
export function coinsAfterUndo(balance: number, awarded: number): number {
  return Math.max(0, balance - awarded);
}
