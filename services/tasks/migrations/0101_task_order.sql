-- Where a new task goes in its list, kept on the profile so an insert needs no MAX(sort_order) scan:
-- above every sort_order the user's tasks have (and at least their number, which bounds any reorder).
ALTER TABLE profiles ADD COLUMN next_sort_order integer NOT NULL DEFAULT 0;
UPDATE profiles p SET next_sort_order = s.next
  FROM (SELECT user_id, GREATEST(MAX(sort_order) + 1, count(*))::int AS next FROM tasks GROUP BY user_id) s
 WHERE s.user_id = p.user_id;
