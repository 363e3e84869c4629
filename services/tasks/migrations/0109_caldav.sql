CREATE TABLE "tasks"."caldav_objects" (
	"task_id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"name" text NOT NULL,
	"uid" text NOT NULL,
	"kept" jsonb NOT NULL,
	CONSTRAINT "caldav_objects_user_name" UNIQUE("user_id","name"),
	CONSTRAINT "caldav_objects_user_uid" UNIQUE("user_id","uid")
);
--> statement-breakpoint
CREATE TABLE "tasks"."caldav_tombstones" (
	"user_id" uuid NOT NULL,
	"topic_id" uuid,
	"name" text NOT NULL,
	"change_xid" "xid8" DEFAULT pg_current_xact_id() NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "tasks"."tasks" ADD COLUMN "change_xid" "xid8" DEFAULT pg_current_xact_id() NOT NULL;--> statement-breakpoint
ALTER TABLE "tasks"."topics" ADD COLUMN "dav_name" text;--> statement-breakpoint
ALTER TABLE "tasks"."caldav_objects" ADD CONSTRAINT "caldav_objects_task_id_fkey" FOREIGN KEY ("task_id") REFERENCES "tasks"."tasks"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "caldav_tombstones_user_topic_change" ON "tasks"."caldav_tombstones" USING btree ("user_id","topic_id","change_xid");--> statement-breakpoint
CREATE INDEX "caldav_tombstones_created" ON "tasks"."caldav_tombstones" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "tasks_user_topic_change" ON "tasks"."tasks" USING btree ("user_id","topic_id","change_xid");--> statement-breakpoint
CREATE UNIQUE INDEX "topics_user_dav_name" ON "tasks"."topics" USING btree ("user_id","dav_name") WHERE dav_name IS NOT NULL;