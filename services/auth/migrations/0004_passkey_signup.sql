-- Passkey-only accounts (SIGNUP_WITH_PASSKEY): a sign-up ceremony carries the id and name of the
-- account it will create, which does not exist yet (so no foreign key).
-- Anonymous ceremonies (sign-in, sign-up) record the client address so each address keeps only a few
-- live challenges (services/auth/src/db/factors.ts insertChallenge).
ALTER TABLE webauthn_challenges DROP CONSTRAINT webauthn_challenges_purpose_check;
ALTER TABLE webauthn_challenges ADD CONSTRAINT webauthn_challenges_purpose_check CHECK (purpose IN ('register', 'login', 'second_factor', 'signup'));
ALTER TABLE webauthn_challenges ADD COLUMN client_key text, ADD COLUMN signup_user_id uuid, ADD COLUMN signup_name text;
CREATE INDEX webauthn_challenges_anonymous ON webauthn_challenges (client_key, created_at) WHERE user_id IS NULL;
CREATE INDEX webauthn_challenges_expiry ON webauthn_challenges (expires_at);
