-- Saved triggers, their exactly-once firings and the activity feed cursors.
CREATE TABLE agent_triggers (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    agent_id TEXT NOT NULL REFERENCES agents (id),
    name TEXT NOT NULL,
    enabled INTEGER NOT NULL,
    source_cbor BLOB NOT NULL,
    prompt TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    last_checked_at INTEGER,
    last_fired_at INTEGER,
    last_error TEXT
) WITHOUT ROWID;

CREATE INDEX agent_triggers_by_agent ON agent_triggers (agent_id, updated_at DESC);

CREATE TABLE trigger_firings (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    agent_id TEXT NOT NULL REFERENCES agents (id),
    trigger_id TEXT NOT NULL REFERENCES agent_triggers (id),
    activity_key TEXT NOT NULL,
    session_id TEXT REFERENCES sessions (id),
    activity_cbor BLOB NOT NULL,
    status TEXT NOT NULL,
    error TEXT,
    created_at INTEGER NOT NULL,
    UNIQUE (account_id, trigger_id, activity_key)
) WITHOUT ROWID;

CREATE INDEX trigger_firings_by_trigger ON trigger_firings (trigger_id, created_at DESC);

CREATE TABLE activity_watermarks (
    account_id TEXT NOT NULL REFERENCES accounts (id),
    server_url TEXT NOT NULL,
    cursor_cbor BLOB NOT NULL,
    last_poll_at INTEGER,
    last_success_at INTEGER,
    last_error TEXT,
    PRIMARY KEY (account_id, server_url)
) WITHOUT ROWID;
