-- One audit chain per account, so that audited writes of different accounts never queue on one
-- head (on PostgreSQL every node's audited writes took turns on the single `audit_chain` row).
-- A row's chain is the account it concerns; its seq counts within that chain. The rows written
-- before this version keep their hashes, which chain them across accounts in seq order: they
-- stay one chain of their own, named '', verified and pruned as any other, and the single head
-- row becomes that chain's.
CREATE TABLE audit_events_v36 (
    chain TEXT NOT NULL,
    seq INTEGER NOT NULL,
    at INTEGER NOT NULL,
    account_id TEXT NOT NULL,
    actor TEXT NOT NULL,
    kind TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL,
    outcome TEXT NOT NULL,
    detail TEXT,
    prev_hash BLOB NOT NULL,
    hash BLOB NOT NULL,
    PRIMARY KEY (chain, seq)
) WITHOUT ROWID;
INSERT INTO audit_events_v36 (chain, seq, at, account_id, actor, kind, action, target, outcome,
        detail, prev_hash, hash)
    SELECT '', seq, at, account_id, actor, kind, action, target, outcome, detail, prev_hash, hash
    FROM audit_events;
DROP TABLE audit_events;
ALTER TABLE audit_events_v36 RENAME TO audit_events;
-- Listings now order by time: seqs count per chain, not across the log.
CREATE INDEX audit_events_by_account ON audit_events (account_id, at);
CREATE INDEX audit_events_by_kind ON audit_events (kind, at);
CREATE INDEX audit_events_by_time ON audit_events (at);
CREATE TABLE audit_chain_v36 (
    chain TEXT NOT NULL PRIMARY KEY,
    head_seq INTEGER NOT NULL,
    head_hash BLOB NOT NULL,
    anchor_seq INTEGER NOT NULL,
    anchor_hash BLOB NOT NULL
) WITHOUT ROWID;
INSERT INTO audit_chain_v36 (chain, head_seq, head_hash, anchor_seq, anchor_hash)
    SELECT '', head_seq, head_hash, anchor_seq, anchor_hash FROM audit_chain WHERE id = 1;
DROP TABLE audit_chain;
ALTER TABLE audit_chain_v36 RENAME TO audit_chain;
