-- Game state (streaks, quests, achievements) on top of the tasks schema. Runs with search_path = tasks.
-- The level is derived from coins (domain/levels.ts) and never stored.

ALTER TABLE profiles
  ADD COLUMN streak_current integer NOT NULL DEFAULT 0,
  ADD COLUMN streak_max integer NOT NULL DEFAULT 0,
  ADD COLUMN streak_last_date date,
  -- 'YYYY-MM' of the calendar month (user's timezone) in which the shield was last used
  ADD COLUMN streak_shield_used_month text,
  ADD COLUMN quest_streak_current integer NOT NULL DEFAULT 0,
  ADD COLUMN quest_streak_max integer NOT NULL DEFAULT 0,
  ADD COLUMN quest_streak_last_date date,
  -- the streak reminder's local time (sent when a live streak has no activity yet that day)
  ADD COLUMN streak_reminder_time time NOT NULL DEFAULT '20:00',
  -- the user's latest energy check-in, for the quest's energy match
  ADD COLUMN energy_level text CHECK (energy_level IN ('HIGH', 'MEDIUM', 'LOW'));

-- Reminder lookups join profiles to the bucket's per-zone windows by timezone.
CREATE INDEX profiles_timezone ON profiles (timezone, user_id);

-- One quest per user per local day: the primary key makes selection idempotent under concurrent
-- GETs, cron runs and replicas (the reference used an optimistic flag update).
CREATE TABLE daily_quests (
  user_id uuid NOT NULL,
  local_date date NOT NULL,
  task_id uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  tier text NOT NULL,
  completed_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, local_date)
);

-- Completions that completed the day's quest (quest streak, first_quest, double_shift).
ALTER TABLE task_completions ADD COLUMN was_daily_quest boolean NOT NULL DEFAULT false;

CREATE TABLE quest_postponements (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL,
  task_id uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  local_date date NOT NULL,
  previous_due_date date,
  previous_snoozed_until date,
  restored_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX quest_postponements_user_date ON quest_postponements (user_id, local_date);

-- Unlocks are idempotent (one row per user and achievement); their coins are booked here, apart
-- from task coins, and added to the profile's balance in the same transaction.
CREATE TABLE user_achievements (
  user_id uuid NOT NULL,
  achievement_key text NOT NULL,
  coins_awarded integer NOT NULL,
  unlocked_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, achievement_key)
);
CREATE INDEX user_achievements_recent ON user_achievements (user_id, unlocked_at DESC);

-- Open work by due date for the due-today / overdue reminders and quest selection.
CREATE INDEX tasks_user_open_due ON tasks (user_id, due_date) WHERE completed_at IS NULL;

-- Notifications the game asks for (achievement unlocked) go through their own outbox, relayed by
-- the game's relay, so the tasks relay keeps only task events. runtime/outbox.ts names the table
-- `outbox`, hence a schema of its own.
CREATE SCHEMA IF NOT EXISTS tasks_game;
-- Its outbox table is created by the runtime (ServiceDefinition.migrations.outboxes), like every outbox.
