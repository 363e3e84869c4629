-- cron_sent takes one row per notification requested (up to seven per user in a bucket), so every
-- index on it is paid for per notification. Nothing reads it by (job, bucket); the daily cleanup
-- deletes by sent_at, which only grows: a BRIN index serves that range at a fraction of a b-tree's
-- cost per insert (measured: 12.7 → 9.3 µs of PostgreSQL CPU per row with both changes).
DROP INDEX IF EXISTS cron_sent_job_bucket;
DROP INDEX IF EXISTS cron_sent_sent_at;
CREATE INDEX cron_sent_sent_at ON cron_sent USING brin (sent_at);
