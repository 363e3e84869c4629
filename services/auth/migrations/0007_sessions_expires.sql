-- Expired sessions are purged at every sign-in (DELETE … WHERE expires < now(), #56.13) and every
-- session read filters on expires > now(): without an index the purge scanned the whole table.
-- An expand step (it only adds): the previous release runs unchanged beside it. A plain CREATE INDEX
-- blocks writes to sessions while it builds: a moment for a table of one row per signed-in browser.
CREATE INDEX "sessions_expires" ON "auth"."sessions" USING btree ("expires");
