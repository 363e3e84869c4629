-- Per-user write rate limits, shared by every gateway replica (src/rate-limit.ts): one counter
-- per user, bucket and one-minute window.
CREATE TABLE rate_limits (
  user_id uuid NOT NULL,
  bucket text NOT NULL,
  window_start timestamptz NOT NULL,
  hits integer NOT NULL,
  PRIMARY KEY (user_id, bucket, window_start)
);
CREATE INDEX rate_limits_window ON rate_limits (window_start);
