//! The store's one error type. Every variant carries what a person needs to act: the database
//! path, the versions involved, the table and column, or SQLite's own error.

use std::path::PathBuf;

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The schema gate refused the file; it was left exactly as it was.
    #[error("refusing to open {}: {reason}\nTo start from a fresh database, delete the database files (rm {}*) and restart.", path.display(), path.display())]
    Refused {
        /// The database file.
        path: PathBuf,
        /// Why.
        reason: Refusal,
    },
    /// A migration failed; the whole batch was rolled back and the file is unchanged.
    #[error("migrating {} from version {from} to {to} failed in {migration}: {source}. The batch was rolled back and the database is still at version {from}; delete the database files (rm {}*) to start fresh", path.display(), path.display())]
    Migration {
        /// The database file.
        path: PathBuf,
        /// The version the file was at (and still is).
        from: u32,
        /// The version the batch was going to.
        to: u32,
        /// The migration that failed, e.g. `0024_signer_capability`.
        migration: String,
        /// What failed (SQLite's error, as a rule).
        source: Box<Error>,
    },
    /// A file-system operation failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// SQLite failed.
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    /// An enum column holds a value outside its annotated set.
    #[error("{table}.{column} holds {value:?}, which is not one of the values schema.sql declares for it")]
    UnknownEnumValue {
        /// The table.
        table: &'static str,
        /// The column.
        column: &'static str,
        /// The value found.
        value: String,
    },
    /// A bool column holds something other than 0 or 1.
    #[error("{table}.{column} holds {value}, which is not a bool (0 or 1)")]
    InvalidBool {
        /// The table.
        table: &'static str,
        /// The column.
        column: &'static str,
        /// The value found.
        value: i64,
    },
    /// A checked query expected a row and found none.
    #[error("the query returned no rows: {sql}")]
    NoRows {
        /// The statement.
        sql: &'static str,
    },
    /// An argument was refused before anything was written.
    #[error("invalid {field}: {reason}")]
    Invalid {
        /// The argument or payload field, e.g. `title` or `plan.steps[2].status`.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A row the operation needs does not exist (in this account).
    #[error("{what} {id:?} not found")]
    NotFound {
        /// What was looked for, e.g. `session`.
        what: &'static str,
        /// Its id or key.
        id: String,
    },
    /// The operation conflicts with what is stored (a duplicate name, a reused key with other bytes).
    #[error("{what} {key:?} conflicts: {reason}")]
    Conflict {
        /// What conflicts, e.g. `model provider`.
        what: &'static str,
        /// The key that conflicts.
        key: String,
        /// Why.
        reason: String,
    },
    // Conversation state.
    /// A stored secret blob is too short to hold the 12-byte nonce and the 16-byte tag. The blob
    /// is never printed.
    #[error("secret ciphertext is {len} bytes, shorter than the {min} bytes of a nonce and a tag")]
    SecretTooShort {
        /// The blob's length.
        len: usize,
        /// The shortest possible blob (nonce + tag, empty value).
        min: usize,
    },
    /// AES-GCM refused a stored secret: its tag does not verify under the server key (the blob was
    /// altered, or written under another key).
    #[error("secret ciphertext does not authenticate under the server key")]
    SecretTagMismatch,
    /// `server_config` holds no `secret_encryption_key_v1`, so nothing can be decrypted
    /// (decrypting never creates a key).
    #[error("server_config has no secret_encryption_key_v1: no secret can be decrypted")]
    NoSecretKey,
    /// `server_config.secret_encryption_key_v1` is not a 32-byte key.
    #[error("server_config.secret_encryption_key_v1 is {len} bytes, not a 32-byte AES-256 key")]
    SecretKeyMalformed {
        /// The stored value's length.
        len: usize,
    },
    /// An agent was deleted (the transaction committed and is not undone), but its state
    /// directory could not be removed from disk.
    #[error("agent {agent_id:?} was deleted, but its state directory {} could not be removed: {source}", path.display())]
    StateDirNotRemoved {
        /// The deleted agent.
        agent_id: String,
        /// Its state directory.
        path: PathBuf,
        /// The file-system error.
        source: std::io::Error,
    },
    // Execution state.
    /// A worker acted on a run whose lease it no longer holds (the run was swept, requeued,
    /// finished, or claimed by another worker).
    #[error("run {run_id:?} is not leased to {owner:?}: the lease was lost")]
    LeaseLost {
        /// The run.
        run_id: String,
        /// The worker that asked.
        owner: String,
    },
    /// A journal append would pass the per-run cap (5,000 entries or 8 MiB); the run was failed
    /// with code `journal-cap` in the same transaction and nothing was appended.
    #[error("run {run_id:?} reached its journal cap ({entries} entries, {bytes} bytes); the run failed with journal-cap")]
    JournalCap {
        /// The run.
        run_id: String,
        /// Entries the journal holds.
        entries: i64,
        /// Bytes the journal holds (before the refused entry).
        bytes: i64,
    },
    // Tools, MCP, drafts, continuations.
    /// A caller tried to delete a tool document that is not a lambda: a builtin is withheld by
    /// disabling it, an MCP projection goes with its server or the agent's reference to it.
    #[error("the {kind} tool {name:?} cannot be deleted: {}", if *kind == "builtin" { "disable it instead" } else { "remove the MCP server or the agent's reference to it" })]
    ToolNotDeletable {
        /// The tool's name.
        name: String,
        /// Its kind (`builtin` or `mcp`).
        kind: &'static str,
    },
    /// A payload could not be encoded or decoded as DAG-CBOR.
    #[error(transparent)]
    Cbor(#[from] crate::cbor::CborError),
}

/// Why the schema gate refused a database file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// The file is not a SQLite database.
    #[error("it is not a SQLite database ({message})")]
    NotADatabase {
        /// SQLite's message.
        message: String,
    },
    /// There is no `server_config` table: the file predates version tracking.
    #[error("it has no server_config table, so its schema version is unknown (it predates version tracking); this binary is at version {supported}")]
    NoServerConfig {
        /// This binary's version.
        supported: u32,
    },
    /// The legacy `schema_version` key is present.
    #[error("it carries the legacy schema_version key ({value:?}) from before migrations were tracked; this binary is at version {supported}")]
    LegacyVersionKey {
        /// The legacy value, as text.
        value: String,
        /// This binary's version.
        supported: u32,
    },
    /// `schema_migration_version` is missing.
    #[error("server_config has no schema_migration_version key, so its schema version is unknown; this binary is at version {supported}")]
    MissingVersion {
        /// This binary's version.
        supported: u32,
    },
    /// `schema_migration_version` is not a version number.
    #[error("its schema_migration_version {value:?} is not a version number; this binary is at version {supported}")]
    UnparseableVersion {
        /// The stored value, as text.
        value: String,
        /// This binary's version.
        supported: u32,
    },
    /// The file is newer than this binary.
    #[error("it is at schema version {found}, newer than this binary's version {supported}")]
    VersionAhead {
        /// The file's version.
        found: u32,
        /// This binary's version.
        supported: u32,
    },
    /// The structure is not the one of the version the file claims.
    #[error("it claims schema version {version} (this binary is at version {supported}), but its structure differs from version {version}:\n{diff}")]
    StructureMismatch {
        /// The claimed version.
        version: u32,
        /// This binary's version.
        supported: u32,
        /// The differences, one object per entry.
        diff: String,
    },
}

/// `Result` with the store's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
