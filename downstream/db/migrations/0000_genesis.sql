-- The first release of the `prefs` extension: the theme only.
CREATE TABLE user_preferences (
    account_id TEXT PRIMARY KEY NOT NULL,
    theme TEXT NOT NULL DEFAULT 'system' CHECK (theme IN ('light', 'dark', 'system')),
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;
