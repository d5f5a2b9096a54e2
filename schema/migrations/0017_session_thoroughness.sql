-- The session's delegation preset override (quick, normal or deep); NULL means the agent's default.
ALTER TABLE sessions ADD COLUMN thoroughness TEXT;
