-- The live status line the agent maintains with the status verb.
ALTER TABLE sessions ADD COLUMN description TEXT;
