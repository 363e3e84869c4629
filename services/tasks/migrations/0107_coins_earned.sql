ALTER TABLE "tasks"."profiles" ADD COLUMN "coins_earned" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- What each user has earned so far, so the level (now counted from it) drops for nobody: the most of
-- the balance, the balance plus what bought wishes cost, and the coins their completions and
-- achievements recorded (completions undone are gone from that table, as their coins are).
UPDATE "tasks"."profiles" p SET "coins_earned" = GREATEST(
  p."coins",
  p."coins" + COALESCE((SELECT sum(w."price") FROM "tasks"."wishlist_items" w WHERE w."user_id" = p."user_id" AND w."status" = 'BOUGHT'), 0),
  COALESCE((SELECT sum(c."coins_awarded") FROM "tasks"."task_completions" c WHERE c."user_id" = p."user_id"), 0)
    + COALESCE((SELECT sum(a."coins_awarded") FROM "tasks"."user_achievements" a WHERE a."user_id" = p."user_id"), 0)
);
