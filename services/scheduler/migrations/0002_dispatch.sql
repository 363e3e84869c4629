-- Notifications this scheduler has requested, keyed by the notification's stable dedupe key
-- (`streak:<user>:<local date>`, `recurring-due:<user>:<date>:<task>` …). Inserting the key and the
-- outbox row in one statement makes a reminder go out at most once per logical notification, across
-- repeated cron calls, concurrent calls, replicas, caught-up buckets and the repeated DST hour.
CREATE TABLE cron_sent (
  dedupe_key text        PRIMARY KEY,
  job        text        NOT NULL,
  bucket     timestamptz NOT NULL,
  user_id    uuid        NOT NULL,
  sent_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX cron_sent_sent_at ON cron_sent (sent_at);
CREATE INDEX cron_sent_job_bucket ON cron_sent (job, bucket);

-- The outbox table is created by the runtime (services/runtime/src/outbox.ts, outboxTableSql) after
-- these files; databases migrated before that keep the identical table this file used to create.

-- The update check's single state row: shared by every replica so the release listing is asked at
-- most once per 24 hours (1 hour after a failure), and the admin page sees when it was last asked.
CREATE TABLE update_check (
  id             smallint    PRIMARY KEY DEFAULT 1 CHECK (id = 1),
  ok             boolean,
  latest_version text,
  error          text,
  checked_at     timestamptz,
  next_check_at  timestamptz NOT NULL DEFAULT '-infinity',
  lease_until    timestamptz
);
INSERT INTO update_check (id) VALUES (1);
