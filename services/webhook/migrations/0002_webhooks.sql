-- Task-event webhook endpoints, the events they receive, one delivery row per (event, endpoint),
-- and every attempt. Deliveries are leased (locked_until + lease) so any number of replicas can work.
CREATE TABLE endpoints (
  id uuid PRIMARY KEY,
  user_id uuid NOT NULL,
  url text NOT NULL,
  -- AES-256-GCM under TOTP_ENCRYPTION_KEY, `iv:tag:ciphertext`
  secret_enc text,
  events text[] NOT NULL DEFAULT '{}',
  enabled boolean NOT NULL DEFAULT true,
  disabled_reason text,
  failing_since timestamptz,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX endpoints_user ON endpoints (user_id, created_at);

CREATE TABLE events (
  -- the bus message id (the producer's outbox id); `test:<uuid>` for synthetic test events
  msg_id text PRIMARY KEY,
  user_id uuid NOT NULL,
  event text NOT NULL,
  -- the exact JSON body every delivery of this event sends (and signs)
  body text NOT NULL,
  received_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE deliveries (
  id uuid PRIMARY KEY,
  event_msg_id text NOT NULL REFERENCES events (msg_id) ON DELETE CASCADE,
  endpoint_id uuid NOT NULL REFERENCES endpoints (id) ON DELETE CASCADE,
  user_id uuid NOT NULL,
  event text NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts int NOT NULL DEFAULT 0,
  -- test sends and manual redeliveries: one attempt, even to a disabled endpoint, no effect on its health
  manual boolean NOT NULL DEFAULT false,
  max_attempts int,
  next_attempt_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  locked_until timestamptz,
  lease uuid,
  response_status int,
  error text,
  duration_ms int,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  last_attempt_at timestamptz,
  delivered_at timestamptz,
  UNIQUE (event_msg_id, endpoint_id)
);
CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX deliveries_endpoint ON deliveries (endpoint_id, created_at DESC);

CREATE TABLE attempts (
  delivery_id uuid NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
  attempt int NOT NULL,
  started_at timestamptz NOT NULL,
  outcome text NOT NULL,
  response_status int,
  error text,
  duration_ms int NOT NULL,
  PRIMARY KEY (delivery_id, attempt)
);

-- The outbox table is created by the runtime (services/runtime/src/outbox.ts, outboxTableSql) after
-- these files; databases migrated before that keep the identical table this file used to create.
