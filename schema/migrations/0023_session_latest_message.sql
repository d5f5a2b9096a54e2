-- The per-session half of the agent rollup.
ALTER TABLE sessions ADD COLUMN message_at INTEGER;
ALTER TABLE sessions ADD COLUMN message_from TEXT;
