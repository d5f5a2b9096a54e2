-- The audit log: an append-only record of provider, secret and tool changes and of security
-- events, each row chained to the one before it by a SHA-256 hash. account_id names an account
-- without a foreign key, so that deleting an account's rows never breaks the chain.
CREATE TABLE audit_events (
    seq INTEGER NOT NULL PRIMARY KEY,
    at INTEGER NOT NULL,
    account_id TEXT NOT NULL,
    actor TEXT NOT NULL,
    kind TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL,
    outcome TEXT NOT NULL,
    detail TEXT,
    prev_hash BLOB NOT NULL,
    hash BLOB NOT NULL
);
CREATE INDEX audit_events_by_account ON audit_events (account_id, seq);
CREATE INDEX audit_events_by_kind ON audit_events (kind, seq);
CREATE INDEX audit_events_by_time ON audit_events (at);
-- The chain's two ends, in one row: the newest row (so that deleting the newest rows is
-- detected) and the anchor the oldest retained row chains from (moved forward by pruning).
CREATE TABLE audit_chain (
    id INTEGER NOT NULL PRIMARY KEY,
    head_seq INTEGER NOT NULL,
    head_hash BLOB NOT NULL,
    anchor_seq INTEGER NOT NULL,
    anchor_hash BLOB NOT NULL
);
