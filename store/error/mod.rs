//! The store's one error type. Every variant carries what a person needs to act: the database
//! path, the versions involved, the table and column, or SQLite's own error.
//!
//! Invariant: trouble in the environment (a lock, a full disk, a read-only medium, a permission,
//! an I/O error) is never a [`Refusal`] and never comes with advice to delete anything: only a
//! file the gate has judged gets a refusal, each with advice that fits it.

mod kind;
mod location;

pub(crate) use location::Location;
#[cfg(feature = "postgres")]
mod postgres;
mod refusal;
mod space;

pub use kind::ErrorKind;
pub use refusal::Refusal;
use std::path::{Path, PathBuf};

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The schema gate refused the file; it was left exactly as it was.
    #[error("refusing to open {}: {reason}\n{}", path.display(), reason.advice(path))]
    Refused {
        /// The database file.
        path: PathBuf,
        /// Why.
        reason: Refusal,
    },
    /// A migration failed; the whole batch was rolled back and the file is unchanged.
    #[error("migrating {} from version {from} to {to} failed in {migration}: {source}. The batch was rolled back and the database is still at version {from}; it was not changed", path.display())]
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
    /// Opening committed (a fresh install or a migration) and then failed while configuring the
    /// connection: the database is already at `version`.
    #[error("{} is already at version {version} (the {what} committed), but configuring it afterwards failed: {source}", path.display())]
    AfterCommit {
        /// The database file.
        path: PathBuf,
        /// What committed: `fresh install` or `migration from version N`.
        what: String,
        /// The version the file is at now.
        version: u32,
        /// What failed.
        source: Box<Error>,
    },
    /// Another connection holds the database's lock past the busy timeout.
    #[error("{} is busy: another connection holds its lock ({detail}); nothing is wrong with the file, try again", path.display())]
    Busy {
        /// The database file.
        path: PathBuf,
        /// SQLite's message.
        detail: String,
    },
    /// The disk holding the database is full.
    #[error("the disk holding {} is full ({detail}); free some space and try again", path.display())]
    DiskFull {
        /// The database file.
        path: PathBuf,
        /// SQLite's or the system's message.
        detail: String,
    },
    /// The database cannot be written: the store was opened read-only, or the file, its
    /// directory or its file system is read-only.
    #[error("{} cannot be written: {detail}", path.display())]
    ReadOnly {
        /// The database file.
        path: PathBuf,
        /// Why, e.g. `the store was opened read-only` or `Read-only file system (os error 30)`.
        detail: String,
    },
    /// The operating system denied access to the database file or its directory.
    #[error("permission denied on {}: {detail}", path.display())]
    PermissionDenied {
        /// The file or directory.
        path: PathBuf,
        /// The system's or SQLite's message.
        detail: String,
    },
    /// Reading or writing the database file failed at the I/O level.
    #[error("I/O error on {}: {detail}", path.display())]
    DiskIo {
        /// The database file.
        path: PathBuf,
        /// SQLite's or the system's message.
        detail: String,
    },
    /// The path cannot name a database file: it is a directory, or lies under a regular file.
    #[error("{} cannot be a database file: {reason}", path.display())]
    NotAFilePath {
        /// The path given.
        path: PathBuf,
        /// Why, e.g. `it is a directory`.
        reason: String,
    },
    /// A rollback journal left by an interrupted write must be rolled back before the file can be
    /// read, and a read-only look cannot do that.
    #[error("{} has a hot journal ({}-journal) left by an interrupted write; the next read-write open rolls it back, a read-only look cannot", path.display(), path.display())]
    HotJournal {
        /// The database file.
        path: PathBuf,
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
    Sqlite(rusqlite::Error),
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
        /// What the caller passed, by its Rust name in snake_case: a parameter (`account_id`,
        /// `page_size`), a field of an operation's request struct (`title` of a `NewRun`), or a
        /// dotted path of Rust field names from the parameter into a nested value
        /// (`plan.steps.id`, `source.schedule.interval_ms`, `config.provider_type`); for a
        /// generated enum's `FromStr`, its column. Never a wire (camelCase) name: these errors
        /// answer a Rust caller, and a server maps them to its clients' names. A unit test in
        /// `store/values/check.rs` holds every field name written in this crate to the rule.
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
    /// `server_config` holds no `secret_encryption_key_v1` (key 1), so nothing under it can be decrypted
    /// (decrypting never creates a key).
    #[error("server_config has no secret_encryption_key_v1: no secret can be decrypted")]
    NoSecretKey,
    /// `server_config.secret_encryption_key_v1` is not a 32-byte key.
    #[error("server_config.secret_encryption_key_v1 is {len} bytes, not a 32-byte AES-256 key")]
    SecretKeyMalformed {
        /// The stored value's length.
        len: usize,
    },
    /// A registered key (`secret_keys`) is not where its provider should serve it: the
    /// database no longer holds it, or the configured provider's ring has no key with its
    /// fingerprint (another key, or a rotation's old key removed too early).
    #[error("secret key {id} (fingerprint {}) is not served by {provider}", fingerprint.as_deref().unwrap_or("unrecorded"))]
    KeyNotServed {
        /// The key's id in `secret_keys`.
        id: i64,
        /// Where it was looked for (`database`, `env:NAME`, `file:PATH`, `command:...`).
        provider: String,
        /// Its recorded fingerprint.
        fingerprint: Option<String>,
    },
    /// A key provider's text is not a key ring (64 hex digits per key). The text is never
    /// printed.
    #[error("the key from {provider} is malformed: {detail}")]
    KeyMalformed {
        /// The provider (`env:NAME`, `file:PATH`, `command:...`).
        provider: String,
        /// What is wrong with it.
        detail: String,
    },
    /// The environment variable of an [`EnvKeyProvider`](crate::keys::EnvKeyProvider) is not set
    /// (or not Unicode).
    #[error("the key variable {name} is not set")]
    KeyEnvUnset {
        /// The variable.
        name: String,
    },
    /// A key file group or others can access is refused before it is read.
    #[error("the key file {} has mode {mode:o}: group or others can access it; chmod 600 it", path.display())]
    KeyFileExposed {
        /// The key file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A key file cannot be read, or created when a key is moved to it.
    #[error("the key file {} cannot be used: {source}", path.display())]
    KeyFileUnreadable {
        /// The key file.
        path: PathBuf,
        /// The file-system error.
        source: std::io::Error,
    },
    /// A key command could not be started.
    #[error("the key command `{command}` could not be run: {source}")]
    KeyCommandSpawn {
        /// The program and its arguments.
        command: String,
        /// Why it did not start.
        source: std::io::Error,
    },
    /// A key command exited unsuccessfully.
    #[error("the key command `{command}` failed: {status}")]
    KeyCommandFailed {
        /// The program and its arguments.
        command: String,
        /// How it exited (`exit status: 1`, `signal: 9`).
        status: String,
    },
    /// A rotation needs a new key and the configured provider offers none: its ring's first key
    /// is already registered. Put the new key first in the ring, keeping the old one after it.
    #[error("{provider} offers no new key to rotate to: put the new key first, the current one after it")]
    NoNewKey {
        /// The provider.
        provider: String,
    },
    /// Moving the key out of the database is not possible now (a rotation in progress, no key
    /// in the database, a target that is the database).
    #[error("the secret key cannot be moved to {target}: {reason}")]
    KeyMoveRefused {
        /// The target provider.
        target: String,
        /// Why.
        reason: String,
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
    Cbor(#[from] crate::values::cbor::CborError),
    /// The tokio runtime shut down before an [`AsyncStore`](crate::AsyncStore) operation
    /// started on its blocking pool: the operation did not run, nothing was written.
    #[error("the tokio runtime shut down before the store operation started; it did not run")]
    RuntimeShutDown,
    /// The extensions given to [`OpenOptions::extension`](crate::OpenOptions::extension)
    /// cannot share one database: two with one name or one object, or one whose object the
    /// store now owns. Nothing was opened.
    #[error("extension {name}: {detail}")]
    ExtensionDeclaration {
        /// The extension.
        name: String,
        /// What collides.
        detail: String,
    },
    /// A statement inside [`Store::write_extension`](crate::Store::write_extension) touched
    /// what no registered extension owns (a store table, the schema): refused, and the whole
    /// write rolled back.
    #[error("an extension's write may change only its own tables, but it {what}; the store's rows are written by the store's operations")]
    StoreTableWrite {
        /// What the statement did, naming the object.
        what: String,
    },
    /// What was asked for exists only on another backend than the one holding the store.
    #[error("{what} is not available on {backend}")]
    Unsupported {
        /// What was asked for.
        what: &'static str,
        /// The backend holding the store.
        backend: &'static str,
    },
    /// A row's value could not be read as the type asked for, on a backend whose client has no
    /// error of its own for that (PostgreSQL: the row was already fetched). On SQLite the same
    /// failure is rusqlite's own, in [`Error::Sqlite`], so no error names a backend it did not
    /// come from.
    #[error("reading column {index} (`{column}`) of a row from {backend}: {detail}")]
    Decode {
        /// The backend the row came from.
        backend: &'static str,
        /// The column's position in the row (0-based).
        index: usize,
        /// The column as the statement names it.
        column: String,
        /// What was wrong.
        detail: String,
    },
    // The PostgreSQL backend.
    /// The PostgreSQL server failed or refused a statement, or could not be reached.
    #[cfg(feature = "postgres")]
    #[error("PostgreSQL at {database}: {}", postgres::Detail(source))]
    Postgres {
        /// The database, as its URL without the password.
        database: String,
        /// The client's error (with the server's SQLSTATE when the server answered).
        source: ::postgres::Error,
    },
    /// The schema gate refused the PostgreSQL database; nothing in it was changed.
    #[error("refusing to use the PostgreSQL database {database}: {reason}\n{}", reason.postgres_advice(database))]
    PostgresRefused {
        /// The database, as its URL without the password.
        database: String,
        /// Why.
        reason: Refusal,
    },
    /// A PostgreSQL migration failed; its transaction was rolled back and the database is
    /// unchanged.
    #[error("migrating the PostgreSQL database {database} from version {from} to {to} failed in {migration}: {source}. The transaction was rolled back and the database is still at version {from}")]
    PostgresMigration {
        /// The database, as its URL without the password.
        database: String,
        /// The version it was at (and still is).
        from: u32,
        /// The version the migration was going to.
        to: u32,
        /// The step that failed, e.g. `0032_secret_keys`.
        migration: String,
        /// What failed.
        source: Box<Error>,
    },
    /// `copy` refuses a target that already holds rows: it copies a whole store or nothing.
    #[error("refusing to copy into {database}: it is not empty ({}); copy into a new, empty database", tables.join(", "))]
    CopyTargetNotEmpty {
        /// The target database, as its URL without the password.
        database: String,
        /// The tables that hold rows, with their counts, or the objects that are not the
        /// store's.
        tables: Vec<String>,
    },
    /// A value of the source cannot be stored in the target's column type.
    #[error("{table}.{column} of the row {key} holds {detail}, which its PostgreSQL column cannot hold; nothing was copied")]
    CopyValue {
        /// The table.
        table: String,
        /// The column.
        column: String,
        /// The row's primary key.
        key: String,
        /// The value's type and why it does not fit.
        detail: String,
    },
    /// What arrived differs from what was read, so the copy was rolled back.
    #[error("copying {table} did not verify: {detail}; nothing was copied")]
    CopyMismatch {
        /// The table.
        table: String,
        /// The counts or checksums that differ.
        detail: String,
    },
}

impl Error {
    /// Classifies an unclassified SQLite error ([`Error::Sqlite`]) as [`Error::from_sqlite`]
    /// does; any other error is returned as it is.
    pub fn at(self, path: &Path) -> Error {
        match self {
            Error::Sqlite(e) => Error::from_sqlite(e, path),
            e => e,
        }
    }

    /// Classifies SQLite's error `e` on the database `path`: environment trouble becomes its
    /// typed variant naming the path; anything else stays [`Error::Sqlite`].
    pub fn from_sqlite(e: rusqlite::Error, path: &Path) -> Error {
        use rusqlite::ErrorCode as C;
        let Some(code) = e.sqlite_error_code() else {
            return Error::Sqlite(e);
        };
        let path = path.to_path_buf();
        if matches!(&e, rusqlite::Error::SqliteFailure(f, _)
            if f.extended_code == rusqlite::ffi::SQLITE_READONLY_ROLLBACK)
        {
            return Error::HotJournal { path };
        }
        let detail = e.to_string();
        match code {
            C::DatabaseBusy | C::DatabaseLocked => Error::Busy { path, detail },
            C::DiskFull => Error::DiskFull { path, detail },
            C::ReadOnly => Error::ReadOnly { path, detail },
            C::PermissionDenied => Error::PermissionDenied { path, detail },
            C::SystemIoFailure | C::CannotOpen => {
                // The extended code tells a read from a write, a lock, a fsync, growing the
                // -shm...
                let detail = match &e {
                    rusqlite::Error::SqliteFailure(f, _) => {
                        format!("{detail} (SQLite code {})", f.extended_code)
                    }
                    _ => detail,
                };
                // SQLite reports some writes that find no room (growing the -shm, say) as I/O
                // errors, not as SQLITE_FULL.
                match space::nearly_full(&path) {
                    Some(free) => Error::DiskFull {
                        detail: format!("{detail}; {free} bytes free on its file system"),
                        path,
                    },
                    None => Error::DiskIo { path, detail },
                }
            }
            _ => Error::Sqlite(e),
        }
    }

    /// Classifies the file-system error `e` on `path` the same way.
    pub fn from_io(e: std::io::Error, path: &Path) -> Error {
        use std::io::ErrorKind as K;
        let path = path.to_path_buf();
        let detail = e.to_string();
        match e.kind() {
            K::PermissionDenied => Error::PermissionDenied { path, detail },
            K::ReadOnlyFilesystem => Error::ReadOnly { path, detail },
            K::StorageFull | K::QuotaExceeded => Error::DiskFull { path, detail },
            K::IsADirectory => Error::NotAFilePath {
                path,
                reason: "it is a directory".into(),
            },
            _ => Error::Io { path, source: e },
        }
    }
}

impl From<rusqlite::Error> for Error {
    /// [`Error::Sqlite`]: a statement's error knows no path; the frame or the read it ran in
    /// classifies it at the store's location (see `error::location`).
    fn from(e: rusqlite::Error) -> Error {
        Error::Sqlite(e)
    }
}

/// `Result` with the store's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::{Error, ErrorKind};
    use rusqlite::ffi;
    use std::path::Path;

    fn sqlite(extended: i32, msg: &str) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(ffi::Error::new(extended), Some(msg.into()))
    }

    #[test]
    fn sqlite_trouble_is_classified_naming_the_path_never_as_a_refusal() {
        let path = Path::new("/srv/agents.sqlite");
        let cases = [
            (ffi::SQLITE_BUSY, ErrorKind::Busy, "is busy"),
            (ffi::SQLITE_LOCKED, ErrorKind::Busy, "is busy"),
            (ffi::SQLITE_FULL, ErrorKind::Storage, "is full"),
            (
                ffi::SQLITE_READONLY,
                ErrorKind::Storage,
                "cannot be written",
            ),
            (ffi::SQLITE_PERM, ErrorKind::Storage, "permission denied"),
            (ffi::SQLITE_IOERR_READ, ErrorKind::Storage, "I/O error"),
            (ffi::SQLITE_IOERR_FSYNC, ErrorKind::Storage, "I/O error"),
            (
                ffi::SQLITE_READONLY_ROLLBACK,
                ErrorKind::Storage,
                "hot journal",
            ),
        ];
        for (code, kind, cause) in cases {
            let e = Error::from_sqlite(sqlite(code, "sqlite says"), path);
            let msg = e.to_string();
            assert_eq!(e.kind(), kind, "{code}: {msg}");
            assert!(msg.contains("/srv/agents.sqlite"), "{code}: {msg}");
            assert!(msg.contains(cause), "{code}: {msg}");
            assert!(!msg.contains("rm ") && !msg.contains("delete"), "{msg}");
        }
        let e = Error::from_sqlite(sqlite(ffi::SQLITE_CONSTRAINT, "no"), path);
        assert!(matches!(e, Error::Sqlite(_)), "{e}");
    }

    #[test]
    fn io_trouble_is_classified_naming_the_path() {
        use std::io::ErrorKind as K;
        let path = Path::new("/srv/agents.sqlite");
        for (kind, cause) in [
            (K::PermissionDenied, "permission denied on"),
            (K::ReadOnlyFilesystem, "cannot be written"),
            (K::StorageFull, "is full"),
            (K::IsADirectory, "it is a directory"),
        ] {
            let e = Error::from_io(std::io::Error::from(kind), path);
            let msg = e.to_string();
            assert_eq!(e.kind(), ErrorKind::Storage, "{msg}");
            assert!(
                msg.contains("/srv/agents.sqlite") && msg.contains(cause),
                "{msg}"
            );
        }
    }
}
