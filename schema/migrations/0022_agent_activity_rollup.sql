-- The agent's latest transcript activity, so unread indicators never enumerate sessions.
ALTER TABLE agents ADD COLUMN activity_at INTEGER;
ALTER TABLE agents ADD COLUMN activity_kind TEXT;
ALTER TABLE agents ADD COLUMN message_at INTEGER;
ALTER TABLE agents ADD COLUMN message_from TEXT;
ALTER TABLE agents ADD COLUMN activity_session_id TEXT;
