//! What kind of failure an [`Error`] is: the classification a server maps to a status and the
//! CLI to an exit code. Invariant: every variant, and every SQLite error the store passes through
//! unclassified, has exactly one kind.

use super::Error;
use crate::values::cbor::CborError;

/// What kind of failure an [`Error`] is, for callers that map errors to responses or exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A row the operation needs does not exist.
    NotFound,
    /// An argument is not acceptable: the caller's fault.
    Invalid,
    /// The operation conflicts with what is stored or with who holds it.
    Conflict,
    /// Another connection holds the lock: retrying may succeed.
    Busy,
    /// The schema gate refused the file (it was left unchanged).
    Refused,
    /// The environment failed: a full disk, a read-only medium, a permission, an I/O error, a
    /// path that cannot hold a file. The data is not at fault.
    Storage,
    /// What is stored cannot be read as what it must be: a payload that does not decode, a
    /// secret that does not authenticate under the key (altered, or written under another
    /// key), a key of the wrong length, a value outside its column's set. Neither the request
    /// nor the medium is at fault: the stored data is, and `seed-agents-db check` is where an
    /// operator starts.
    Corrupt,
    /// Anything else: a bug (an operation the backend does not offer, say), or SQLite failing
    /// in a way the store does not classify.
    Internal,
}

impl ErrorKind {
    /// The kind as a stable snake_case name (`not_found`, `invalid`, `conflict`, `busy`,
    /// `refused`, `storage`, `corrupt`, `internal`), for logs and machine-readable output.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "not_found",
            ErrorKind::Invalid => "invalid",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Busy => "busy",
            ErrorKind::Refused => "refused",
            ErrorKind::Storage => "storage",
            ErrorKind::Corrupt => "corrupt",
            ErrorKind::Internal => "internal",
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The kind of a SQLite error that reached the caller unclassified ([`Error::Sqlite`]), so that a
/// server tells a busy database from a constraint failure without a `rusqlite` of its own: a
/// UNIQUE, primary-key, foreign-key or trigger constraint is a conflict with what is stored, a
/// NOT NULL or CHECK constraint and a value of the wrong type are invalid input, no row is not
/// found, and environment trouble is busy or storage as [`Error::from_sqlite`] would type it.
fn sqlite_kind(e: &rusqlite::Error) -> ErrorKind {
    use rusqlite::{ffi, Error as E, ErrorCode as C};
    match e {
        E::QueryReturnedNoRows => ErrorKind::NotFound,
        E::ToSqlConversionFailure(_)
        | E::FromSqlConversionFailure(..)
        | E::IntegralValueOutOfRange(..)
        | E::InvalidColumnType(..)
        | E::Utf8Error(..) => ErrorKind::Invalid,
        E::SqliteFailure(f, _) => match f.code {
            C::DatabaseBusy | C::DatabaseLocked => ErrorKind::Busy,
            C::DiskFull
            | C::ReadOnly
            | C::PermissionDenied
            | C::SystemIoFailure
            | C::CannotOpen => ErrorKind::Storage,
            C::ConstraintViolation => match f.extended_code {
                ffi::SQLITE_CONSTRAINT_NOTNULL | ffi::SQLITE_CONSTRAINT_CHECK => ErrorKind::Invalid,
                _ => ErrorKind::Conflict,
            },
            C::TooBig => ErrorKind::Invalid,
            _ => ErrorKind::Internal,
        },
        _ => ErrorKind::Internal,
    }
}

impl Error {
    /// The kind of this failure: what a server maps to a status (not found 404, invalid 400,
    /// conflict 409, busy 503, refused, storage, corrupt and internal 500, say). An unclassified SQLite
    /// error ([`Error::Sqlite`]) is classified too.
    ///
    /// ```
    /// use seed_agents_store::{ErrorKind, Store};
    ///
    /// # let dir = tempfile::tempdir()?;
    /// let mut store = Store::open(dir.path().join("agents.sqlite"))?;
    /// let err = store.delete_session("acct-1", "no-such-session").unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::NotFound);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Refused { .. } | Error::PostgresRefused { .. } => ErrorKind::Refused,
            #[cfg(feature = "postgres")]
            Error::Postgres { source, .. } => super::postgres::kind(source),
            Error::Busy { .. } => ErrorKind::Busy,
            Error::DiskFull { .. }
            | Error::ReadOnly { .. }
            | Error::PermissionDenied { .. }
            | Error::DiskIo { .. }
            | Error::NotAFilePath { .. }
            | Error::HotJournal { .. }
            | Error::Io { .. }
            | Error::StateDirNotRemoved { .. }
            | Error::KeyNotServed { .. }
            | Error::KeyEnvUnset { .. }
            | Error::KeyFileExposed { .. }
            | Error::KeyFileUnreadable { .. }
            | Error::KeyCommandSpawn { .. }
            | Error::KeyCommandFailed { .. }
            | Error::KeyMalformed { .. }
            | Error::NoSecretKey => ErrorKind::Storage,
            Error::Migration { source, .. }
            | Error::AfterCommit { source, .. }
            | Error::PostgresMigration { source, .. } => source.kind(),
            Error::Sqlite(e) => sqlite_kind(e),
            Error::NotFound { .. } => ErrorKind::NotFound,
            // Encoding fails on what the caller passed (a non-finite float, a shadowed key);
            // decoding only ever reads what is stored.
            Error::Invalid { .. }
            | Error::ExtensionDeclaration { .. }
            | Error::StoreTableWrite { .. }
            | Error::CopyValue { .. }
            | Error::Decode { .. }
            | Error::Cbor(CborError::Encode { .. }) => ErrorKind::Invalid,
            Error::UnknownEnumValue { .. }
            | Error::InvalidBool { .. }
            | Error::SecretTooShort { .. }
            | Error::SecretTagMismatch
            | Error::SecretKeyMalformed { .. }
            | Error::Cbor(CborError::Decode { .. } | CborError::NonCanonical { .. }) => {
                ErrorKind::Corrupt
            }
            Error::Conflict { .. }
            | Error::LeaseLost { .. }
            | Error::JournalCap { .. }
            | Error::ToolNotDeletable { .. }
            | Error::NoNewKey { .. }
            | Error::KeyMoveRefused { .. }
            | Error::CopyTargetNotEmpty { .. } => ErrorKind::Conflict,
            Error::NoRows { .. }
            | Error::CopyMismatch { .. }
            | Error::Unsupported { .. }
            | Error::RuntimeShutDown => ErrorKind::Internal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Error, ErrorKind};

    /// Errors from a real SQLite, unclassified by the store, still have the kind a server needs.
    #[test]
    fn raw_sqlite_errors_are_classified() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "PRAGMA foreign_keys = ON;
             CREATE TABLE p (id TEXT PRIMARY KEY, n INTEGER NOT NULL CHECK (n >= 0));
             CREATE TABLE c (id TEXT PRIMARY KEY, p TEXT NOT NULL REFERENCES p (id));
             INSERT INTO p VALUES ('a', 1);",
        )
        .unwrap();
        let kind = |sql: &str| Error::Sqlite(conn.execute_batch(sql).unwrap_err()).kind();
        assert_eq!(kind("INSERT INTO p VALUES ('a', 2)"), ErrorKind::Conflict);
        assert_eq!(
            kind("INSERT INTO c VALUES ('x', 'missing')"),
            ErrorKind::Conflict
        );
        assert_eq!(kind("INSERT INTO p VALUES ('b', NULL)"), ErrorKind::Invalid);
        assert_eq!(kind("INSERT INTO p VALUES ('b', -1)"), ErrorKind::Invalid);
        assert_eq!(kind("SELEC 1"), ErrorKind::Internal);
        let none = conn
            .query_row("SELECT id FROM p WHERE id = 'zz'", [], |r| {
                r.get::<_, String>(0)
            })
            .unwrap_err();
        assert_eq!(Error::Sqlite(none).kind(), ErrorKind::NotFound);
        let wrong = conn
            .query_row("SELECT id FROM p", [], |r| r.get::<_, i64>(0))
            .unwrap_err();
        assert_eq!(Error::Sqlite(wrong).kind(), ErrorKind::Invalid);

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("busy.sqlite");
        let a = rusqlite::Connection::open(&path).unwrap();
        a.execute_batch("CREATE TABLE t (x); BEGIN IMMEDIATE; INSERT INTO t VALUES (1);")
            .unwrap();
        let b = rusqlite::Connection::open(&path).unwrap();
        b.busy_timeout(std::time::Duration::ZERO).unwrap();
        let busy = b.execute_batch("INSERT INTO t VALUES (2)").unwrap_err();
        assert_eq!(Error::Sqlite(busy).kind(), ErrorKind::Busy);
    }

    /// The README's table of every variant and its kind says what [`Error::kind`] does: one
    /// value of every variant (the match in `name` is exhaustive, so a new variant fails to
    /// compile here until it is listed), its row found by name, its kind the row's.
    #[test]
    fn the_readme_lists_every_variant_with_its_kind() {
        use crate::error::Refusal;
        use crate::values::cbor::CborError;
        use std::path::PathBuf;
        fn name(e: &Error) -> &'static str {
            match e {
                Error::Refused { .. } => "Refused",
                Error::Migration { .. } => "Migration",
                Error::AfterCommit { .. } => "AfterCommit",
                Error::Busy { .. } => "Busy",
                Error::DiskFull { .. } => "DiskFull",
                Error::ReadOnly { .. } => "ReadOnly",
                Error::PermissionDenied { .. } => "PermissionDenied",
                Error::DiskIo { .. } => "DiskIo",
                Error::NotAFilePath { .. } => "NotAFilePath",
                Error::HotJournal { .. } => "HotJournal",
                Error::Io { .. } => "Io",
                Error::Sqlite(_) => "Sqlite",
                Error::UnknownEnumValue { .. } => "UnknownEnumValue",
                Error::InvalidBool { .. } => "InvalidBool",
                Error::NoRows { .. } => "NoRows",
                Error::Invalid { .. } => "Invalid",
                Error::NotFound { .. } => "NotFound",
                Error::Conflict { .. } => "Conflict",
                Error::SecretTooShort { .. } => "SecretTooShort",
                Error::SecretTagMismatch => "SecretTagMismatch",
                Error::NoSecretKey => "NoSecretKey",
                Error::SecretKeyMalformed { .. } => "SecretKeyMalformed",
                Error::KeyNotServed { .. } => "KeyNotServed",
                Error::KeyMalformed { .. } => "KeyMalformed",
                Error::KeyEnvUnset { .. } => "KeyEnvUnset",
                Error::KeyFileExposed { .. } => "KeyFileExposed",
                Error::KeyFileUnreadable { .. } => "KeyFileUnreadable",
                Error::KeyCommandSpawn { .. } => "KeyCommandSpawn",
                Error::KeyCommandFailed { .. } => "KeyCommandFailed",
                Error::NoNewKey { .. } => "NoNewKey",
                Error::KeyMoveRefused { .. } => "KeyMoveRefused",
                Error::StateDirNotRemoved { .. } => "StateDirNotRemoved",
                Error::LeaseLost { .. } => "LeaseLost",
                Error::JournalCap { .. } => "JournalCap",
                Error::ToolNotDeletable { .. } => "ToolNotDeletable",
                Error::Cbor(_) => "Cbor",
                Error::RuntimeShutDown => "RuntimeShutDown",
                Error::Unsupported { .. } => "Unsupported",
                Error::ExtensionDeclaration { .. } => "ExtensionDeclaration",
                Error::StoreTableWrite { .. } => "StoreTableWrite",
                Error::Decode { .. } => "Decode",
                #[cfg(feature = "postgres")]
                Error::Postgres { .. } => "Postgres",
                Error::PostgresRefused { .. } => "PostgresRefused",
                Error::PostgresMigration { .. } => "PostgresMigration",
                Error::CopyTargetNotEmpty { .. } => "CopyTargetNotEmpty",
                Error::CopyValue { .. } => "CopyValue",
                Error::CopyMismatch { .. } => "CopyMismatch",
            }
        }
        let readme = include_str!("../../README.md");
        let row = |name: &str| {
            let start = format!("| `{name}` |");
            let line = readme
                .lines()
                .find(|l| l.starts_with(&start))
                .unwrap_or_else(|| panic!("the README's error table has no row for {name}"));
            line[start.len()..]
                .split('|')
                .next()
                .unwrap()
                .trim()
                .to_string()
        };
        let path = || PathBuf::from("/srv/agents.sqlite");
        let text = || String::from("x");
        let io = || std::io::Error::from(std::io::ErrorKind::Other);
        let source = || {
            Box::new(Error::Busy {
                path: path(),
                detail: text(),
            })
        };
        let corrupt = Refusal::Corrupt { detail: text() };
        let sqlite = rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(1), None);
        let fixed = [
            Error::Refused {
                path: path(),
                reason: corrupt.clone(),
            },
            Error::Busy {
                path: path(),
                detail: text(),
            },
            Error::DiskFull {
                path: path(),
                detail: text(),
            },
            Error::ReadOnly {
                path: path(),
                detail: text(),
            },
            Error::PermissionDenied {
                path: path(),
                detail: text(),
            },
            Error::DiskIo {
                path: path(),
                detail: text(),
            },
            Error::NotAFilePath {
                path: path(),
                reason: text(),
            },
            Error::HotJournal { path: path() },
            Error::Io {
                path: path(),
                source: io(),
            },
            Error::UnknownEnumValue {
                table: "runs",
                column: "status",
                value: text(),
            },
            Error::InvalidBool {
                table: "agents",
                column: "public_read",
                value: 2,
            },
            Error::NoRows { sql: "SELECT 1" },
            Error::Invalid {
                field: "x",
                reason: text(),
            },
            Error::NotFound {
                what: "session",
                id: text(),
            },
            Error::Conflict {
                what: "model provider",
                key: text(),
                reason: text(),
            },
            Error::SecretTooShort { len: 1, min: 28 },
            Error::SecretTagMismatch,
            Error::NoSecretKey,
            Error::SecretKeyMalformed { len: 1 },
            Error::KeyNotServed {
                id: 1,
                provider: text(),
                fingerprint: None,
            },
            Error::KeyMalformed {
                provider: text(),
                detail: text(),
            },
            Error::KeyEnvUnset { name: text() },
            Error::KeyFileExposed {
                path: path(),
                mode: 0o644,
            },
            Error::KeyFileUnreadable {
                path: path(),
                source: io(),
            },
            Error::KeyCommandSpawn {
                command: text(),
                source: io(),
            },
            Error::KeyCommandFailed {
                command: text(),
                status: text(),
            },
            Error::NoNewKey { provider: text() },
            Error::KeyMoveRefused {
                target: text(),
                reason: text(),
            },
            Error::StateDirNotRemoved {
                agent_id: text(),
                path: path(),
                source: io(),
            },
            Error::LeaseLost {
                run_id: text(),
                owner: text(),
            },
            Error::JournalCap {
                run_id: text(),
                entries: 1,
                bytes: 1,
            },
            Error::ToolNotDeletable {
                name: text(),
                kind: "builtin",
            },
            Error::RuntimeShutDown,
            Error::Decode {
                backend: "PostgreSQL",
                index: 0,
                column: text(),
                detail: text(),
            },
            Error::Unsupported {
                what: "x",
                backend: "PostgreSQL",
            },
            Error::ExtensionDeclaration {
                name: text(),
                detail: text(),
            },
            Error::StoreTableWrite { what: text() },
            Error::PostgresRefused {
                database: text(),
                reason: corrupt,
            },
            Error::CopyTargetNotEmpty {
                database: text(),
                tables: vec![],
            },
            Error::CopyValue {
                table: text(),
                column: text(),
                key: text(),
                detail: text(),
            },
            Error::CopyMismatch {
                table: text(),
                detail: text(),
            },
        ];
        for e in &fixed {
            assert_eq!(row(name(e)), format!("`{}`", e.kind()), "{}", name(e));
        }
        // Those whose kind is their cause's.
        let migration = Error::Migration {
            path: path(),
            from: 11,
            to: 34,
            migration: text(),
            source: source(),
        };
        let after = Error::AfterCommit {
            path: path(),
            what: text(),
            version: 34,
            source: source(),
        };
        let postgres_migration = Error::PostgresMigration {
            database: text(),
            from: 29,
            to: 34,
            migration: text(),
            source: source(),
        };
        for e in [migration, after, postgres_migration] {
            assert_eq!(e.kind(), ErrorKind::Busy);
            assert!(row(name(&e)).contains("its `source`'s"), "{}", name(&e));
        }
        let encode = Error::Cbor(CborError::Encode { message: text() });
        let decode = Error::Cbor(CborError::Decode { message: text() });
        let cbor = row(name(&encode));
        assert_eq!(encode.kind(), ErrorKind::Invalid);
        assert_eq!(decode.kind(), ErrorKind::Corrupt);
        assert!(
            cbor.contains("`invalid`") && cbor.contains("`corrupt`"),
            "{cbor}"
        );
        assert!(row(name(&Error::Sqlite(sqlite))).contains("by SQLite's code"));
        #[cfg(feature = "postgres")]
        assert!(row("Postgres").contains("by SQLSTATE"));
    }
}
