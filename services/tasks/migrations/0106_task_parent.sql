ALTER TABLE "tasks"."tasks" ADD COLUMN "parent_id" uuid;--> statement-breakpoint
ALTER TABLE "tasks"."tasks" ADD CONSTRAINT "tasks_parent_id_fkey" FOREIGN KEY ("parent_id") REFERENCES "tasks"."tasks"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "tasks_parent" ON "tasks"."tasks" USING btree ("parent_id","sort_order","created_at","id") WHERE parent_id IS NOT NULL;--> statement-breakpoint
ALTER TABLE "tasks"."tasks" ADD CONSTRAINT "tasks_parent_check" CHECK (parent_id IS NULL OR (parent_id <> id AND type <> 'RECURRING'));