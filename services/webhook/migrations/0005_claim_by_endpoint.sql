-- The claim takes each user's fair share (docs/webhooks.md, Fair scheduling): it walks the endpoints
-- that have due rows (one index descent each, whatever their backlog) and reads each one's rows in
-- due order. The index on due time alone made a claim walk every row due before another user's.
-- A replica of the previous release still claims correctly during a rolling upgrade (without its
-- index, by a sort of the pending rows).
DROP INDEX "webhook"."deliveries_due";--> statement-breakpoint
CREATE INDEX "deliveries_due_by_endpoint" ON "webhook"."deliveries" USING btree ("endpoint_id","next_attempt_at") WHERE status = 'pending';
