-- Second-factor attempts as one counter row per user (#19.1): an attempt is reserved by a single
-- atomic upsert before the code is checked, so concurrent guesses cannot all pass a count that was
-- read before any of them was recorded. Replaces the per-failure log (it held only limiter state).
DROP TABLE second_factor_failures;
CREATE TABLE second_factor_attempts (
  user_id uuid PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
  window_start timestamptz NOT NULL,
  attempts int NOT NULL
);
