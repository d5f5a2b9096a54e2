-- One secret per webhook trigger, and the body digest that refuses a reused Idempotency-Key.
CREATE TABLE webhook_trigger_credentials (
    trigger_id TEXT PRIMARY KEY REFERENCES agent_triggers (id),
    account_id TEXT NOT NULL REFERENCES accounts (id),
    secret_hash TEXT NOT NULL,
    secret_ciphertext BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;

ALTER TABLE trigger_firings ADD COLUMN body_digest TEXT;
