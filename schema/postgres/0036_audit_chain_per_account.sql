-- The PostgreSQL side of migrations/0036_audit_chain_per_account.sql: the same chains, as a
-- column added in place (PostgreSQL alters tables without rebuilding them). The rows and the
-- head written before it become the chain ''. Its indexes end with the primary key, as every
-- non-unique index of the PostgreSQL schema does.
ALTER TABLE audit_events ADD COLUMN chain text COLLATE "C";
UPDATE audit_events SET chain = '';
ALTER TABLE audit_events ALTER COLUMN chain SET NOT NULL;
ALTER TABLE audit_events DROP CONSTRAINT audit_events_pkey;
ALTER TABLE audit_events ADD CONSTRAINT audit_events_pkey PRIMARY KEY (chain, seq);
DROP INDEX audit_events_by_account;
DROP INDEX audit_events_by_kind;
DROP INDEX audit_events_by_time;
CREATE INDEX audit_events_by_account ON audit_events (account_id, at, chain, seq);
CREATE INDEX audit_events_by_kind ON audit_events (kind, at, chain, seq);
CREATE INDEX audit_events_by_time ON audit_events (at, chain, seq);
ALTER TABLE audit_chain ADD COLUMN chain text COLLATE "C";
UPDATE audit_chain SET chain = '';
ALTER TABLE audit_chain ALTER COLUMN chain SET NOT NULL;
ALTER TABLE audit_chain DROP CONSTRAINT audit_chain_pkey;
ALTER TABLE audit_chain DROP COLUMN id;
ALTER TABLE audit_chain ADD CONSTRAINT audit_chain_pkey PRIMARY KEY (chain);
