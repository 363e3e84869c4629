-- Per-user notification channels, browser push subscriptions (one per device) and the delivery log,
-- whose unique (dedupe_key, channel, target) makes each notification go out at most once per channel.
CREATE TABLE channels (
  user_id uuid NOT NULL,
  type text NOT NULL CHECK (type IN ('push', 'ntfy', 'pushover', 'telegram', 'email', 'http-alert')),
  enabled boolean NOT NULL DEFAULT true,
  -- non-secret settings (server, topic, chat id, address, url…)
  config jsonb NOT NULL DEFAULT '{}',
  -- secret settings as JSON, AES-256-GCM under TOTP_ENCRYPTION_KEY (`iv:tag:ciphertext`)
  secrets_enc text,
  -- names of the stored secrets, so settings can show has… flags without decrypting
  secret_fields text[] NOT NULL DEFAULT '{}',
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (user_id, type)
);

CREATE TABLE push_subscriptions (
  id uuid PRIMARY KEY,
  user_id uuid NOT NULL,
  endpoint text NOT NULL UNIQUE,
  p256dh text NOT NULL,
  auth text NOT NULL,
  user_agent text,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX push_subscriptions_user ON push_subscriptions (user_id);

CREATE TABLE deliveries (
  id uuid PRIMARY KEY,
  user_id uuid NOT NULL,
  dedupe_key text NOT NULL,
  channel text NOT NULL,
  -- 'default', or the push subscription id
  target text NOT NULL,
  title text NOT NULL,
  tag text,
  status text NOT NULL CHECK (status IN ('sending', 'sent', 'retrying', 'failed')),
  attempts int NOT NULL DEFAULT 0,
  locked_until timestamptz,
  error text,
  test boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  UNIQUE (dedupe_key, channel, target)
);
CREATE INDEX deliveries_user ON deliveries (user_id, updated_at DESC);
