-- One row per cron job per 5-minute bucket: the unique key makes every job idempotent across
-- replicas and repeated calls, and the rows are the history shown in health and admin.
CREATE TABLE cron_runs (
  job         text        NOT NULL,
  bucket      timestamptz NOT NULL,
  started_at  timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  status      text        NOT NULL DEFAULT 'running',
  detail      jsonb,
  PRIMARY KEY (job, bucket)
);
CREATE INDEX cron_runs_started ON cron_runs (started_at DESC);
