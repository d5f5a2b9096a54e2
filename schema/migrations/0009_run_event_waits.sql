-- Outstanding ctx.waitForEvent registrations, and the run a continue-as-new successor continues.
CREATE TABLE run_event_waits (
    run_id TEXT NOT NULL REFERENCES runs (id),
    wait_id TEXT NOT NULL,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    match_cbor BLOB NOT NULL,
    timeout_at INTEGER,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (run_id, wait_id)
) WITHOUT ROWID;

CREATE INDEX run_event_waits_by_account ON run_event_waits (account_id, created_at);

ALTER TABLE runs ADD COLUMN continued_from_run_id TEXT;
