CREATE TABLE "tasks"."import_chunks" (
	"import_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"seq" integer NOT NULL,
	"data" "bytea" NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "import_chunks_pkey" PRIMARY KEY("import_id","seq")
);
--> statement-breakpoint
CREATE TABLE "tasks"."import_sources" (
	"user_id" uuid NOT NULL,
	"source_key" text NOT NULL,
	"kind" text NOT NULL,
	"target_id" uuid,
	"import_id" uuid NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "import_sources_pkey" PRIMARY KEY("user_id","source_key")
);
--> statement-breakpoint
CREATE TABLE "tasks"."imports" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"status" text NOT NULL,
	"format" text NOT NULL,
	"file_name" text NOT NULL,
	"bytes" integer NOT NULL,
	"sha256" text NOT NULL,
	"reference_date" date NOT NULL,
	"time_zone" text NOT NULL,
	"plan_digest" text NOT NULL,
	"preview" jsonb NOT NULL,
	"progress_done" integer DEFAULT 0 NOT NULL,
	"progress_total" integer DEFAULT 0 NOT NULL,
	"heartbeat_at" timestamp with time zone,
	"result" jsonb,
	"error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "imports_status_check" CHECK (status IN ('previewed', 'running', 'done', 'failed', 'cancelled', 'expired')),
	CONSTRAINT "imports_format_check" CHECK (format IN ('tasksvc', 'reference', 'todoist-csv', 'todoist-zip', 'icalendar'))
);
--> statement-breakpoint
ALTER TABLE "tasks"."task_completions" ADD COLUMN "imported" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "tasks"."topics" ADD COLUMN "imported" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "tasks"."wishlist_items" ADD COLUMN "imported" boolean DEFAULT false NOT NULL;--> statement-breakpoint
CREATE INDEX "import_chunks_created" ON "tasks"."import_chunks" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "imports_user" ON "tasks"."imports" USING btree ("user_id","created_at");--> statement-breakpoint
CREATE INDEX "imports_expires" ON "tasks"."imports" USING btree ("expires_at");