-- The server's own tables, beside the store's: the `prefs` extension (see the README's "Your own
-- tables"). This file is the fresh-install baseline at the newest version; migrations/ is the
-- history from this extension's own genesis, replayed on top of the store's newest schema.
--
-- Store rows are referenced by value (`account_id`), not by a foreign key: a store release may
-- rebuild one of its tables, and a foreign key into it would follow the rebuild.

-- How an account's dashboard looks.
CREATE TABLE user_preferences (
    -- The account these are for (the store's `accounts.id`).
    account_id TEXT PRIMARY KEY NOT NULL,
    -- The color theme.
    -- @enum(light, dark, system)
    theme TEXT NOT NULL DEFAULT 'system' CHECK (theme IN ('light', 'dark', 'system')),
    -- Runs listed per dashboard page.
    page_size INTEGER NOT NULL DEFAULT 50,
    -- When the preferences were last written.
    -- @timestamp
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;
