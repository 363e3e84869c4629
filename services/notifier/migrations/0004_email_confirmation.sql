-- E-mail addresses are confirmed by a mailed link before mail goes to them (issue 56 #2).
ALTER TABLE "notifier"."channels" ADD COLUMN "confirmed_address" text;--> statement-breakpoint
ALTER TABLE "notifier"."channels" ADD COLUMN "confirm_nonce" text;--> statement-breakpoint
-- addresses saved before confirmation existed were already being mailed: they stay in use (a change needs confirming)
UPDATE "notifier"."channels" SET "confirmed_address" = "config"->>'address' WHERE "type" = 'email';
