CREATE INDEX "task_completions_counted" ON "tasks"."task_completions" USING btree ("user_id") WHERE NOT imported AND subtask_of IS NULL;--> statement-breakpoint
CREATE INDEX "task_completions_quest" ON "tasks"."task_completions" USING btree ("user_id") WHERE was_daily_quest;--> statement-breakpoint
CREATE INDEX "tasks_user_high" ON "tasks"."tasks" USING btree ("user_id") WHERE priority = 'HIGH';