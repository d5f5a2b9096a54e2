-- Protect titles the user typed: rows without a real title are 'system', the rest were typed by a user.
ALTER TABLE sessions ADD COLUMN title_source TEXT NOT NULL DEFAULT 'system';

UPDATE sessions
SET title_source = CASE
    WHEN title IS NULL OR title = '' OR title = 'Untitled session' THEN 'system'
    ELSE 'user'
END;
