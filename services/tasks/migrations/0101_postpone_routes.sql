-- Every route that postpones (the quest's and the task's) counts against one daily limit, so both
-- record a postponement; only the quest's own can be restored through the quest.
ALTER TABLE quest_postponements ADD COLUMN via text NOT NULL DEFAULT 'quest' CHECK (via IN ('quest', 'task'));
