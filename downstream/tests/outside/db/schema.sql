-- The API tokens a server hands out, beside the store's tables.
CREATE TABLE api_tokens (
    -- The token's hash, hex.
    hash TEXT PRIMARY KEY NOT NULL,
    -- The account it acts for (the store's `accounts.id`).
    account_id TEXT NOT NULL,
    -- A name its owner gave it.
    label TEXT
) WITHOUT ROWID;
