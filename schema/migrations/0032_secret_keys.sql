-- Secret versioning: a registry of the keys that encrypt secrets, and on every encrypted row the
-- key that decrypts it and when it was last re-encrypted. Rows written before this version were
-- all encrypted under the one key of `server_config.secret_encryption_key_v1`, registered here as
-- key 1 (its fingerprint is recorded by the store the next time it writes with it: SQL cannot
-- hash). The key is registered whenever something may have been encrypted under it, even when
-- the key itself is missing, so that every row names a registered key.
CREATE TABLE secret_keys (
    id INTEGER PRIMARY KEY NOT NULL,
    provider TEXT NOT NULL,
    fingerprint TEXT UNIQUE,
    created_at INTEGER NOT NULL,
    retired_at INTEGER
);
INSERT INTO secret_keys (id, provider, fingerprint, created_at, retired_at)
    SELECT 1, 'database', NULL, CAST(unixepoch('subsec') * 1000 AS INTEGER), NULL
    WHERE EXISTS (SELECT 1 FROM server_config WHERE key = 'secret_encryption_key_v1')
        OR EXISTS (SELECT 1 FROM secrets)
        OR EXISTS (SELECT 1 FROM webhook_trigger_credentials);

CREATE TABLE secrets_keyed (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    name TEXT NOT NULL,
    ciphertext BLOB NOT NULL,
    metadata_cbor BLOB,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    key_id INTEGER NOT NULL REFERENCES secret_keys (id),
    rotated_at INTEGER,
    UNIQUE (account_id, name)
) WITHOUT ROWID;
INSERT INTO secrets_keyed
        (id, account_id, name, ciphertext, metadata_cbor, created_at, updated_at, key_id, rotated_at)
    SELECT id, account_id, name, ciphertext, metadata_cbor, created_at, updated_at, 1, NULL
    FROM secrets;
DROP TABLE secrets;
ALTER TABLE secrets_keyed RENAME TO secrets;
CREATE INDEX secrets_by_key_id ON secrets (key_id);

CREATE TABLE webhook_trigger_credentials_keyed (
    trigger_id TEXT PRIMARY KEY REFERENCES agent_triggers (id),
    account_id TEXT NOT NULL REFERENCES accounts (id),
    secret_hash TEXT NOT NULL,
    secret_ciphertext BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    key_id INTEGER NOT NULL REFERENCES secret_keys (id),
    rotated_at INTEGER
) WITHOUT ROWID;
INSERT INTO webhook_trigger_credentials_keyed
        (trigger_id, account_id, secret_hash, secret_ciphertext, created_at, updated_at, key_id,
         rotated_at)
    SELECT trigger_id, account_id, secret_hash, secret_ciphertext, created_at, updated_at, 1, NULL
    FROM webhook_trigger_credentials;
DROP TABLE webhook_trigger_credentials;
ALTER TABLE webhook_trigger_credentials_keyed RENAME TO webhook_trigger_credentials;
CREATE INDEX webhook_trigger_credentials_by_key_id ON webhook_trigger_credentials (key_id);
