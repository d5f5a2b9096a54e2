-- Retention and pruning (issue 13, part 1). The policy lives in the file, so the CLI and every
-- server process on it prune with the same one; no row means the kind is kept forever.
CREATE TABLE retention_policies (
    kind TEXT PRIMARY KEY,
    max_age_ms INTEGER NOT NULL,
    keep_count INTEGER,
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;
-- Pruning walks old rows oldest first: terminal runs by when they ended, idempotency rows by when
-- they were recorded. Without these each prune batch would scan the whole table.
CREATE INDEX runs_by_finished ON runs (finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX action_idempotency_by_created ON action_idempotency (created_at);
