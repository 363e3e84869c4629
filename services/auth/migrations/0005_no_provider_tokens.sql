-- Provider access, refresh and ID tokens were stored in plaintext and never read (#19.5): drop the
-- stored ones and refuse new ones, so a copy of the database holds no credential for a provider.
UPDATE accounts SET access_token = NULL, refresh_token = NULL, id_token = NULL, session_state = NULL
  WHERE access_token IS NOT NULL OR refresh_token IS NOT NULL OR id_token IS NOT NULL OR session_state IS NOT NULL;
ALTER TABLE accounts ADD CONSTRAINT accounts_no_provider_tokens CHECK (access_token IS NULL AND refresh_token IS NULL AND id_token IS NULL AND session_state IS NULL);
