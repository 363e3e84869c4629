CREATE TABLE "scheduler"."reminder_queue" (
	"task_id" uuid NOT NULL,
	"reminder_key" text NOT NULL,
	"fire_at" timestamp with time zone NOT NULL,
	"user_id" uuid NOT NULL,
	"version" timestamp with time zone NOT NULL,
	"handled_at" timestamp with time zone,
	"outcome" text,
	CONSTRAINT "reminder_queue_pkey" PRIMARY KEY("task_id","reminder_key","fire_at")
);
--> statement-breakpoint
CREATE INDEX "reminder_queue_due" ON "scheduler"."reminder_queue" USING btree ("fire_at") WHERE handled_at IS NULL;--> statement-breakpoint
CREATE INDEX "reminder_queue_handled_at" ON "scheduler"."reminder_queue" USING brin ("handled_at");