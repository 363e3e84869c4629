-- Tasks, topics, completions, the per-user profile and the event outbox.
-- Runs with search_path = tasks. Game state (streaks, quests, achievements) arrives in later files.

-- One row per user, created on first use. Users live in the auth service; no cross-schema FK so the
-- services stay independently deployable.
CREATE TABLE profiles (
  user_id uuid PRIMARY KEY,
  timezone text NOT NULL DEFAULT 'UTC',
  coins integer NOT NULL DEFAULT 0 CHECK (coins >= 0),
  total_tasks_created integer NOT NULL DEFAULT 0,
  vacation_end_date date,
  postpone_limit smallint NOT NULL DEFAULT 3 CHECK (postpone_limit BETWEEN 1 AND 5),
  notification_enabled boolean NOT NULL DEFAULT false,
  notification_time time NOT NULL DEFAULT '09:00',
  due_today_reminder_enabled boolean NOT NULL DEFAULT false,
  due_today_reminder_time time NOT NULL DEFAULT '08:00',
  recurring_due_reminder_enabled boolean NOT NULL DEFAULT false,
  recurring_due_reminder_time time NOT NULL DEFAULT '08:00',
  overdue_reminder_enabled boolean NOT NULL DEFAULT false,
  overdue_reminder_time time NOT NULL DEFAULT '09:00',
  morning_briefing_enabled boolean NOT NULL DEFAULT false,
  morning_briefing_time time NOT NULL DEFAULT '07:00',
  weekly_review_time time NOT NULL DEFAULT '18:00',
  -- SHA-256 (hex) of the iCal feed token; the token itself is shown once and never stored.
  calendar_feed_token_hash text UNIQUE,
  calendar_feed_created_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE topics (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL,
  title text NOT NULL,
  description text,
  color text,
  icon text,
  priority text NOT NULL DEFAULT 'NORMAL' CHECK (priority IN ('HIGH', 'NORMAL', 'SOMEDAY')),
  archived boolean NOT NULL DEFAULT false,
  sequential boolean NOT NULL DEFAULT false,
  default_energy_level text CHECK (default_energy_level IN ('HIGH', 'MEDIUM', 'LOW')),
  sort_order integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX topics_user ON topics (user_id, sort_order, created_at);

CREATE TABLE tasks (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL,
  topic_id uuid REFERENCES topics (id) ON DELETE SET NULL,
  title text NOT NULL,
  notes text,
  type text NOT NULL CHECK (type IN ('ONE_TIME', 'RECURRING', 'DAILY_ELIGIBLE')),
  priority text NOT NULL DEFAULT 'NORMAL' CHECK (priority IN ('HIGH', 'NORMAL', 'SOMEDAY')),
  recurrence_type text CHECK (recurrence_type IN ('INTERVAL', 'WEEKDAY', 'MONTHLY', 'YEARLY', 'NTH_WEEKDAY')),
  recurrence_interval integer,
  recurrence_weekdays smallint[],
  recurrence_week_of_month smallint,
  recurrence_fixed boolean NOT NULL DEFAULT false,
  -- the date the recurrence schedule is counted from (see domain/recurrence.ts)
  recurrence_anchor date,
  due_date date,
  next_due_date date,
  completed_at timestamptz,
  coin_value integer NOT NULL DEFAULT 1,
  is_daily_quest boolean NOT NULL DEFAULT false,
  daily_quest_date date,
  postpone_count integer NOT NULL DEFAULT 0,
  estimated_minutes integer,
  snoozed_until date,
  energy_level text CHECK (energy_level IN ('HIGH', 'MEDIUM', 'LOW')),
  sort_order integer NOT NULL DEFAULT 0,
  paused_at timestamptz,
  paused_until date,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK (type <> 'RECURRING' OR (recurrence_type IS NOT NULL AND next_due_date IS NOT NULL AND recurrence_anchor IS NOT NULL)),
  CHECK (type <> 'RECURRING' OR completed_at IS NULL)
);
CREATE INDEX tasks_user_order ON tasks (user_id, sort_order, created_at, id);
-- serves the sort-order lookup on create, per-topic listing and the sequential-topic "blocked" check
CREATE INDEX tasks_user_topic_order ON tasks (user_id, topic_id, sort_order, created_at, id);

-- One row per completion. coins_awarded is what the completion granted (undo takes back exactly
-- that); the previous_* columns let an undo restore a RECURRING task's schedule.
CREATE TABLE task_completions (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  task_id uuid REFERENCES tasks (id) ON DELETE SET NULL,
  user_id uuid NOT NULL,
  completed_at timestamptz NOT NULL,
  local_date date NOT NULL,
  coins_awarded integer NOT NULL DEFAULT 0,
  previous_next_due_date date,
  previous_anchor date,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX task_completions_task ON task_completions (task_id, created_at DESC);
CREATE INDEX task_completions_user_date ON task_completions (user_id, local_date);

-- The outbox table is created by the runtime (services/runtime/src/outbox.ts, outboxTableSql) after
-- these files; databases migrated before that keep the identical table this file used to create.
