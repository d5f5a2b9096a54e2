-- One row per continue_session edge. Session ids carry no foreign key: the history outlives deletion.
CREATE TABLE session_continuations (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    predecessor_session_id TEXT NOT NULL,
    successor_session_id TEXT NOT NULL,
    origin_session_id TEXT NOT NULL,
    tool_call_id TEXT NOT NULL,
    initiating_event_id TEXT,
    reason TEXT,
    manifest_cbor BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (successor_session_id),
    UNIQUE (predecessor_session_id, tool_call_id)
) WITHOUT ROWID;

CREATE INDEX session_continuations_by_origin ON session_continuations (origin_session_id, created_at);
