-- Remote MCP servers an account has connected.
CREATE TABLE mcp_servers (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    name TEXT NOT NULL,
    config_cbor BLOB NOT NULL,
    tools_cbor BLOB,
    status_cbor BLOB,
    enabled INTEGER NOT NULL DEFAULT 1,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    UNIQUE (account_id, name)
) WITHOUT ROWID;
