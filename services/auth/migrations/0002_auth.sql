-- Users, linked provider accounts, sessions, API keys and second factors.
-- Runs with search_path = auth, public.

CREATE TABLE users (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  email text,
  name text,
  image text,
  email_verified timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_active_at timestamptz
);
-- Not unique: the same address at two providers is two users until the user links them explicitly.
CREATE INDEX users_email ON users (lower(email));

CREATE TABLE accounts (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  type text NOT NULL,
  provider text NOT NULL,
  provider_account_id text NOT NULL,
  refresh_token text,
  access_token text,
  expires_at bigint,
  token_type text,
  scope text,
  id_token text,
  session_state text,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (provider, provider_account_id)
);
CREATE INDEX accounts_user ON accounts (user_id);

-- The cookie carries a random token; only HMAC-SHA256(AUTH_SECRET, token) is stored, so a changed
-- AUTH_SECRET matches no row (everyone is signed out) and a stolen table yields no usable cookie.
CREATE TABLE sessions (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  token_hash text NOT NULL UNIQUE,
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  expires timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_active_at timestamptz NOT NULL DEFAULT now(),
  second_factor_verified_at timestamptz,
  user_agent text,
  ip text
);
CREATE INDEX sessions_user ON sessions (user_id);

CREATE TABLE api_keys (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  name text NOT NULL,
  -- first characters of the key, shown in lists so a user can tell keys apart
  display_prefix text NOT NULL,
  key_hash text NOT NULL UNIQUE,
  read_only boolean NOT NULL DEFAULT false,
  expires_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz
);
CREATE INDEX api_keys_user ON api_keys (user_id);

-- One TOTP secret per user, AES-256-GCM under TOTP_ENCRYPTION_KEY. enabled_at is null while the
-- user has started but not confirmed enrolment. last_time_step refuses a replayed code.
CREATE TABLE totp_credentials (
  user_id uuid PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
  secret_encrypted text NOT NULL,
  enabled_at timestamptz,
  last_time_step bigint,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE totp_backup_codes (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  code_hash text NOT NULL,
  used_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX totp_backup_codes_user ON totp_backup_codes (user_id);

CREATE TABLE authenticators (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  credential_id text NOT NULL UNIQUE,
  public_key bytea NOT NULL,
  counter bigint NOT NULL DEFAULT 0,
  transports text[] NOT NULL DEFAULT '{}',
  device_type text,
  backed_up boolean NOT NULL DEFAULT false,
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz
);
CREATE INDEX authenticators_user ON authenticators (user_id);

-- WebAuthn challenges live in the database so any replica can finish a ceremony another started.
CREATE TABLE webauthn_challenges (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  purpose text NOT NULL CHECK (purpose IN ('register', 'login', 'second_factor')),
  user_id uuid REFERENCES users (id) ON DELETE CASCADE,
  challenge text NOT NULL,
  expires_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
