-- Stored request and response bytes per client request id, so a retried create replays its answer.
CREATE TABLE action_idempotency (
    account_id TEXT NOT NULL,
    action TEXT NOT NULL,
    client_request_id TEXT NOT NULL,
    request_cbor BLOB NOT NULL,
    response_cbor BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (account_id, action, client_request_id)
) WITHOUT ROWID;
