CREATE TABLE "tasks"."reminder_action_uses" (
	"nonce" text PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"task_id" uuid NOT NULL,
	"action" text NOT NULL,
	"used_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "tasks"."tasks" ADD COLUMN "due_time" time;--> statement-breakpoint
ALTER TABLE "tasks"."tasks" ADD COLUMN "reminders" jsonb DEFAULT '[]'::jsonb NOT NULL;--> statement-breakpoint
CREATE INDEX "reminder_action_uses_used_at" ON "tasks"."reminder_action_uses" USING btree ("used_at");--> statement-breakpoint
ALTER TABLE "tasks"."tasks" ADD CONSTRAINT "tasks_due_time_check" CHECK (due_time IS NULL OR COALESCE(next_due_date, due_date) IS NOT NULL);