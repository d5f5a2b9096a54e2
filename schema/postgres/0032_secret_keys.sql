-- The PostgreSQL side of migrations/0032_secret_keys.sql: the same registry and the same
-- backfill (every existing secret and webhook credential is sealed under key 1, the database
-- key), as columns added in place, since PostgreSQL alters tables without rebuilding them. Its
-- indexes end with the primary key, as every non-unique index of the PostgreSQL schema does.
CREATE TABLE secret_keys (
    id bigint NOT NULL,
    provider text COLLATE "C" NOT NULL,
    fingerprint text COLLATE "C",
    created_at bigint NOT NULL,
    retired_at bigint,
    CONSTRAINT secret_keys_pkey PRIMARY KEY (id),
    CONSTRAINT secret_keys_fingerprint_key UNIQUE (fingerprint)
);
-- Key 1 exists once anything was sealed (or its key material was stored) before the registry.
INSERT INTO secret_keys (id, provider, fingerprint, created_at, retired_at)
    SELECT 1, 'database', NULL, CAST(floor(extract(epoch FROM clock_timestamp()) * 1000) AS bigint), NULL
    WHERE EXISTS (SELECT 1 FROM server_config WHERE key = 'secret_encryption_key_v1')
        OR EXISTS (SELECT 1 FROM secrets)
        OR EXISTS (SELECT 1 FROM webhook_trigger_credentials);
ALTER TABLE secrets ADD COLUMN key_id bigint;
ALTER TABLE secrets ADD COLUMN rotated_at bigint;
UPDATE secrets SET key_id = 1;
ALTER TABLE secrets ALTER COLUMN key_id SET NOT NULL;
ALTER TABLE secrets ADD CONSTRAINT secrets_key_id_fkey FOREIGN KEY (key_id) REFERENCES secret_keys (id)
    DEFERRABLE INITIALLY IMMEDIATE;
CREATE INDEX secrets_by_key_id ON secrets (key_id, id);
ALTER TABLE webhook_trigger_credentials ADD COLUMN key_id bigint;
ALTER TABLE webhook_trigger_credentials ADD COLUMN rotated_at bigint;
UPDATE webhook_trigger_credentials SET key_id = 1;
ALTER TABLE webhook_trigger_credentials ALTER COLUMN key_id SET NOT NULL;
ALTER TABLE webhook_trigger_credentials ADD CONSTRAINT webhook_trigger_credentials_key_id_fkey
    FOREIGN KEY (key_id) REFERENCES secret_keys (id)
    DEFERRABLE INITIALLY IMMEDIATE;
CREATE INDEX webhook_trigger_credentials_by_key_id ON webhook_trigger_credentials (key_id, trigger_id);
