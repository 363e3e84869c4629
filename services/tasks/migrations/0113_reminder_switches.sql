DROP INDEX "tasks"."profiles_due_streak";--> statement-breakpoint
DROP INDEX "tasks"."profiles_due_weekly_review";--> statement-breakpoint
ALTER TABLE "tasks"."profiles" ADD COLUMN "streak_reminder_enabled" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "tasks"."profiles" ADD COLUMN "weekly_review_enabled" boolean DEFAULT false NOT NULL;--> statement-breakpoint
-- The streak reminder and the weekly review followed the daily quest reminder's switch until now:
-- each gets its value, so nobody gains or loses a reminder. New profiles start with both off, as before.
UPDATE "tasks"."profiles" SET "streak_reminder_enabled" = "notification_enabled", "weekly_review_enabled" = "notification_enabled" WHERE "notification_enabled";--> statement-breakpoint
CREATE INDEX "profiles_due_streak" ON "tasks"."profiles" USING btree ("timezone","streak_reminder_time","user_id") WHERE "tasks"."profiles"."streak_reminder_enabled";--> statement-breakpoint
CREATE INDEX "profiles_due_weekly_review" ON "tasks"."profiles" USING btree ("timezone","weekly_review_time","user_id") WHERE "tasks"."profiles"."weekly_review_enabled";