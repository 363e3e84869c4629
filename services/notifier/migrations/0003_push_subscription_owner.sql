-- A push subscription belongs to the user who registered it (#19.13): knowing another user's
-- endpoint URL must not move their subscription. The same endpoint under another user is a separate
-- row (a shared browser signed in as two people); each row carries its registrant's keys.
ALTER TABLE push_subscriptions DROP CONSTRAINT push_subscriptions_endpoint_key;
ALTER TABLE push_subscriptions ADD CONSTRAINT push_subscriptions_user_endpoint_key UNIQUE (user_id, endpoint);
