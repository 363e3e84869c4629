import type { PoolClient } from '@tasksvc/runtime';

type Queryable = Pick<PoolClient, 'query'>;

export interface ProfileRow {
  user_id: string;
  timezone: string;
  coins: number;
  total_tasks_created: number;
  vacation_end_date: string | null;
  postpone_limit: number;
  notification_enabled: boolean;
  notification_time: string;
  due_today_reminder_enabled: boolean;
  due_today_reminder_time: string;
  recurring_due_reminder_enabled: boolean;
  recurring_due_reminder_time: string;
  overdue_reminder_enabled: boolean;
  overdue_reminder_time: string;
  morning_briefing_enabled: boolean;
  morning_briefing_time: string;
  weekly_review_time: string;
  calendar_feed_created_at: Date | null;
  created_at: Date;
}

// Dates and times as text: they are wall-clock values in the user's zone, not instants.
const COLS = `user_id, timezone, coins, total_tasks_created, vacation_end_date::text, postpone_limit, notification_enabled,
  to_char(notification_time, 'HH24:MI') AS notification_time, due_today_reminder_enabled, to_char(due_today_reminder_time, 'HH24:MI') AS due_today_reminder_time,
  recurring_due_reminder_enabled, to_char(recurring_due_reminder_time, 'HH24:MI') AS recurring_due_reminder_time,
  overdue_reminder_enabled, to_char(overdue_reminder_time, 'HH24:MI') AS overdue_reminder_time,
  morning_briefing_enabled, to_char(morning_briefing_time, 'HH24:MI') AS morning_briefing_time,
  to_char(weekly_review_time, 'HH24:MI') AS weekly_review_time, calendar_feed_created_at, created_at`;

/** The user's profile, created with defaults on first use. */
export async function ensureProfile(db: Queryable, userId: string): Promise<ProfileRow> {
  const found = await db.query<ProfileRow>(`SELECT ${COLS} FROM tasks.profiles WHERE user_id = $1`, [userId]);
  if (found.rows[0]) return found.rows[0];
  await db.query('INSERT INTO tasks.profiles (user_id) VALUES ($1) ON CONFLICT (user_id) DO NOTHING', [userId]);
  const { rows } = await db.query<ProfileRow>(`SELECT ${COLS} FROM tasks.profiles WHERE user_id = $1`, [userId]);
  return rows[0]!;
}

export async function setTimezone(db: Queryable, userId: string, timezone: string): Promise<void> {
  await ensureProfile(db, userId);
  await db.query('UPDATE tasks.profiles SET timezone = $2, updated_at = now() WHERE user_id = $1', [userId, timezone]);
}

/** Add (or with a negative delta take) coins, never below zero; returns the new balance. */
export async function addCoins(db: Queryable, userId: string, delta: number): Promise<number> {
  const { rows } = await db.query<{ coins: number }>('UPDATE tasks.profiles SET coins = GREATEST(coins + $2, 0), updated_at = now() WHERE user_id = $1 RETURNING coins', [userId, delta]);
  return rows[0]?.coins ?? 0;
}

export async function coinBalance(db: Queryable, userId: string): Promise<number> {
  const { rows } = await db.query<{ coins: number }>('SELECT coins FROM tasks.profiles WHERE user_id = $1', [userId]);
  return rows[0]?.coins ?? 0;
}

/** Keep new tasks after a sort order the user set by hand. */
export async function reserveSortOrder(db: Queryable, userId: string, sortOrder: number): Promise<void> {
  await db.query('UPDATE tasks.profiles SET next_sort_order = $2 WHERE user_id = $1 AND next_sort_order < $2', [userId, sortOrder + 1]);
}

export async function setFeedTokenHash(db: Queryable, userId: string, hash: string | null): Promise<Date | null> {
  await ensureProfile(db, userId);
  const { rows } = await db.query<{ calendar_feed_created_at: Date | null }>(
    `UPDATE tasks.profiles SET calendar_feed_token_hash = $2, calendar_feed_created_at = CASE WHEN $2::text IS NULL THEN NULL ELSE now() END, updated_at = now()
     WHERE user_id = $1 RETURNING calendar_feed_created_at`,
    [userId, hash],
  );
  return rows[0]?.calendar_feed_created_at ?? null;
}

export async function profileByFeedHash(db: Queryable, hash: string): Promise<{ user_id: string; timezone: string } | null> {
  const { rows } = await db.query<{ user_id: string; timezone: string }>('SELECT user_id, timezone FROM tasks.profiles WHERE calendar_feed_token_hash = $1', [hash]);
  return rows[0] ?? null;
}
