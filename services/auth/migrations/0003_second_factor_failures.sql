-- Failed second-factor codes per user, for the brute-force limit (shared by every replica).
CREATE TABLE second_factor_failures (
  id bigserial PRIMARY KEY,
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX second_factor_failures_user ON second_factor_failures (user_id, at);
