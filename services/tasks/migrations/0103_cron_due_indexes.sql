-- Cron: the users due in a 5-minute bucket are found by index, not by reading every profile.
-- One partial index per reminder kind on (timezone, local reminder time, user id), holding only the
-- users who have that reminder switched on: collect.ts maps the bucket to a wall-clock window per
-- zone (DST rules stay in TypeScript, domain/reminders.ts) and range-scans each zone's slice, and
-- pages through the due users in this index order (keyset on time, user id), so a page costs the
-- same whether 100 or 100,000 users are due. The predicates must match collect.ts's JOB_SETTINGS.
-- A profile that switches nothing on (the default) is in none of them.
CREATE INDEX profiles_due_morning_briefing ON profiles (timezone, morning_briefing_time, user_id) WHERE morning_briefing_enabled;
CREATE INDEX profiles_due_overdue ON profiles (timezone, overdue_reminder_time, user_id) WHERE overdue_reminder_enabled;
CREATE INDEX profiles_due_due_today ON profiles (timezone, due_today_reminder_time, user_id) WHERE due_today_reminder_enabled;
CREATE INDEX profiles_due_recurring ON profiles (timezone, recurring_due_reminder_time, user_id) WHERE recurring_due_reminder_enabled;
CREATE INDEX profiles_due_daily_quest ON profiles (timezone, notification_time, user_id) WHERE notification_enabled;
CREATE INDEX profiles_due_streak ON profiles (timezone, streak_reminder_time, user_id) WHERE notification_enabled;
CREATE INDEX profiles_due_weekly_review ON profiles (timezone, weekly_review_time, user_id) WHERE notification_enabled;
