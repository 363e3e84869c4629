import { orm, selectList, statement, type Queryable } from '@tasksvc/runtime';
import { and, eq, getTableColumns, gte, lt, sql, type SQL } from 'drizzle-orm';
import { profiles } from './schema.ts';

/** A user's profile: settings, coins, streaks, vacation (everything but the feed token's hash). */
export type ProfileRow = Omit<typeof profiles.$inferSelect, 'calendarFeedTokenHash'>;
/** What a settings change may set. */
export type ProfileColumns = Partial<Omit<typeof profiles.$inferInsert, 'userId' | 'createdAt' | 'updatedAt' | 'calendarFeedTokenHash' | 'calendarFeedCreatedAt'>>;

const { calendarFeedTokenHash: _, ...PROFILE } = getTableColumns(profiles);
const mine = (userId: string) => eq(profiles.userId, userId);
const touched = { updatedAt: sql`now()` };

// Read on nearly every request (the caller's zone and settings): rendered once.
const read = (suffix: SQL) => statement(sql`SELECT ${selectList(PROFILE)} FROM ${profiles} WHERE ${profiles.userId} = ${sql.placeholder('userId')}${suffix}`, PROFILE);
const reads = { plain: read(sql``), locked: read(sql` FOR UPDATE`) };

async function readProfile(q: Queryable, userId: string, lock: boolean): Promise<ProfileRow | null> {
  return (await reads[lock ? 'locked' : 'plain'].run(q, { userId })).rows[0] ?? null;
}

/** The user's profile, created with defaults on first use. */
export async function ensureProfile(q: Queryable, userId: string): Promise<ProfileRow> {
  const found = await readProfile(q, userId, false);
  if (found) return found;
  await orm(q).insert(profiles).values({ userId }).onConflictDoNothing({ target: profiles.userId });
  return (await readProfile(q, userId, false))!;
}

/**
 * The profile locked for the caller's transaction (created first if need be): two completions, or a
 * completion and a postpone, of one user then take turns over its streaks and limits.
 */
export async function lockProfile(q: Queryable, userId: string): Promise<ProfileRow> {
  return (await readProfile(q, userId, true)) ?? (await ensureProfile(q, userId), (await readProfile(q, userId, true))!);
}

/** Change settings of an existing profile (a key left out stays as it is). */
export async function updateProfile(q: Queryable, userId: string, cols: ProfileColumns): Promise<void> {
  await orm(q)
    .update(profiles)
    .set({ ...cols, ...touched })
    .where(mine(userId));
}

/** The user's zone (UTC without a profile). */
export async function profileZone(q: Queryable, userId: string): Promise<string> {
  return (await readProfile(q, userId, false))?.timezone ?? 'UTC';
}

export async function setTimezone(q: Queryable, userId: string, timezone: string): Promise<void> {
  await ensureProfile(q, userId);
  await updateProfile(q, userId, { timezone });
}

/**
 * Add earned coins (or with a negative delta take back an undone completion's), never below zero;
 * returns the new balance. What was earned moves with it (the level comes from it); spending does not.
 */
export async function addCoins(q: Queryable, userId: string, delta: number): Promise<number> {
  const [row] = await orm(q)
    .update(profiles)
    .set({ coins: sql`GREATEST(${profiles.coins} + ${delta}, 0)`, coinsEarned: sql`GREATEST(${profiles.coinsEarned} + ${delta}, 0)`, ...touched })
    .where(mine(userId))
    .returning({ coins: profiles.coins });
  return row?.coins ?? 0;
}

/** Spend `price` coins if the balance covers it; false (and nothing spent) when it does not. */
export async function spendCoins(q: Queryable, userId: string, price: number): Promise<boolean> {
  const rows = await orm(q)
    .update(profiles)
    .set({ coins: sql`${profiles.coins} - ${price}`, ...touched })
    .where(and(mine(userId), gte(profiles.coins, price)))
    .returning({ coins: profiles.coins });
  return rows.length > 0;
}

/** What the user has earned over time (the level's measure), 0 without a profile. */
export async function coinsEarned(q: Queryable, userId: string): Promise<number> {
  const [row] = await orm(q).select({ earned: profiles.coinsEarned }).from(profiles).where(mine(userId));
  return row?.earned ?? 0;
}

export async function coinBalance(q: Queryable, userId: string): Promise<number> {
  const [row] = await orm(q).select({ coins: profiles.coins }).from(profiles).where(mine(userId));
  return row?.coins ?? 0;
}

/** Keep new tasks after a sort order the user set by hand. */
export async function reserveSortOrder(q: Queryable, userId: string, sortOrder: number): Promise<void> {
  await orm(q)
    .update(profiles)
    .set({ nextSortOrder: sortOrder + 1 })
    .where(and(mine(userId), lt(profiles.nextSortOrder, sortOrder + 1)));
}

export async function setFeedTokenHash(q: Queryable, userId: string, hash: string | null): Promise<Date | null> {
  await ensureProfile(q, userId);
  const [row] = await orm(q)
    .update(profiles)
    .set({ calendarFeedTokenHash: hash, calendarFeedCreatedAt: hash === null ? null : sql`now()`, ...touched })
    .where(mine(userId))
    .returning({ createdAt: profiles.calendarFeedCreatedAt });
  return row?.createdAt ?? null;
}

export async function profileByFeedHash(q: Queryable, hash: string): Promise<{ userId: string; timezone: string } | null> {
  const [row] = await orm(q).select({ userId: profiles.userId, timezone: profiles.timezone }).from(profiles).where(eq(profiles.calendarFeedTokenHash, hash));
  return row ?? null;
}

/** The profile fields behind both streaks and the vacation. */
export type StreakColumns = Pick<
  ProfileRow,
  'streakCurrent' | 'streakMax' | 'streakLastDate' | 'streakShieldUsedMonth' | 'questStreakCurrent' | 'questStreakMax' | 'questStreakLastDate' | 'vacationStartDate' | 'vacationEndDate'
>;
