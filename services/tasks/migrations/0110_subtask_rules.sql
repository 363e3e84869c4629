ALTER TABLE "tasks"."profiles" ADD COLUMN "auto_complete_parent" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "tasks"."task_completions" ADD COLUMN "subtask_of" uuid;--> statement-breakpoint
ALTER TABLE "tasks"."task_completions" ADD COLUMN "part_of" uuid;--> statement-breakpoint
ALTER TABLE "tasks"."task_completions" ADD COLUMN "reset_subtasks" jsonb;--> statement-breakpoint
ALTER TABLE "tasks"."tasks" ADD COLUMN "subtask_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "tasks"."tasks" ADD COLUMN "subtasks_done" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "task_completions_part_of" ON "tasks"."task_completions" USING btree ("part_of") WHERE part_of IS NOT NULL;--> statement-breakpoint
-- A parent's subtask_count and subtasks_done follow every insert, delete, move and completion of a
-- subtask, whichever code writes it (the API, an import, CalDAV, an account deletion): the rules for
-- completing the last open subtask and a parent with open ones read them (docs/tasks.md). The same
-- trigger is the last guard of "one level deep": a subtask's parent is a top-level task of the same
-- user, and a task with subtasks is not moved under another (the API refuses both first, naming the
-- field). A top-level task's insert or completion leaves the trigger out (its WHEN is false).
CREATE FUNCTION "tasks"."count_subtasks"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND OLD.parent_id IS NOT DISTINCT FROM NEW.parent_id THEN
    UPDATE "tasks"."tasks" SET "subtasks_done" = "subtasks_done" + (NEW.completed_at IS NOT NULL)::int - (OLD.completed_at IS NOT NULL)::int
     WHERE "id" = NEW.parent_id;
    RETURN NULL;
  END IF;
  IF TG_OP <> 'INSERT' AND OLD.parent_id IS NOT NULL THEN
    UPDATE "tasks"."tasks" SET "subtask_count" = "subtask_count" - 1, "subtasks_done" = "subtasks_done" - (OLD.completed_at IS NOT NULL)::int
     WHERE "id" = OLD.parent_id;
  END IF;
  IF TG_OP <> 'DELETE' AND NEW.parent_id IS NOT NULL THEN
    IF NEW.subtask_count > 0 THEN
      RAISE EXCEPTION 'a task with subtasks cannot be a subtask' USING ERRCODE = 'check_violation', CONSTRAINT = 'tasks_one_level';
    END IF;
    UPDATE "tasks"."tasks" SET "subtask_count" = "subtask_count" + 1, "subtasks_done" = "subtasks_done" + (NEW.completed_at IS NOT NULL)::int
     WHERE "id" = NEW.parent_id AND "user_id" = NEW.user_id AND "parent_id" IS NULL;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'a subtask''s parent is a top-level task of the same user' USING ERRCODE = 'check_violation', CONSTRAINT = 'tasks_one_level';
    END IF;
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "tasks_count_subtasks_insert" AFTER INSERT ON "tasks"."tasks"
  FOR EACH ROW WHEN (NEW.parent_id IS NOT NULL) EXECUTE FUNCTION "tasks"."count_subtasks"();
--> statement-breakpoint
CREATE TRIGGER "tasks_count_subtasks_delete" AFTER DELETE ON "tasks"."tasks"
  FOR EACH ROW WHEN (OLD.parent_id IS NOT NULL) EXECUTE FUNCTION "tasks"."count_subtasks"();
--> statement-breakpoint
CREATE TRIGGER "tasks_count_subtasks_update" AFTER UPDATE OF "parent_id", "completed_at" ON "tasks"."tasks"
  FOR EACH ROW WHEN (OLD.parent_id IS DISTINCT FROM NEW.parent_id OR (NEW.parent_id IS NOT NULL AND (OLD.completed_at IS NULL) <> (NEW.completed_at IS NULL)))
  EXECUTE FUNCTION "tasks"."count_subtasks"();
--> statement-breakpoint
UPDATE "tasks"."tasks" p SET "subtask_count" = c.n, "subtasks_done" = c.done
  FROM (SELECT "parent_id", count(*)::int AS n, (count(*) FILTER (WHERE "completed_at" IS NOT NULL))::int AS done FROM "tasks"."tasks" WHERE "parent_id" IS NOT NULL GROUP BY "parent_id") c
 WHERE c."parent_id" = p."id";
