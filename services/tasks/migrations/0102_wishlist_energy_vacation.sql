-- Wishlist: things a person buys with their coins (reference §6). Bought and discarded items stay as history.
CREATE TABLE wishlist_items (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL,
  title text NOT NULL,
  price integer NOT NULL CHECK (price >= 0),
  url text,
  status text NOT NULL DEFAULT 'OPEN' CHECK (status IN ('OPEN', 'BOUGHT', 'DISCARDED')),
  created_at timestamptz NOT NULL DEFAULT now(),
  closed_at timestamptz
);
CREATE INDEX wishlist_items_user ON wishlist_items (user_id, created_at);

-- Energy check-ins: one per user and local day, the latest wins; the profile keeps the current level.
CREATE TABLE energy_checkins (
  user_id uuid NOT NULL,
  local_date date NOT NULL,
  level text NOT NULL CHECK (level IN ('HIGH', 'MEDIUM', 'LOW')),
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, local_date)
);

-- Vacation: from its first day to vacation_end_date (inclusive; NULL while open-ended). Its days send
-- no reminders and never break a streak.
ALTER TABLE profiles ADD COLUMN vacation_start_date date;
