//! What kind of failure an [`Error`] is: the classification a server maps to a status and the
//! CLI to an exit code. Invariant: every variant, and every SQLite error the store passes through
//! unclassified, has exactly one kind.

use super::Error;

/// What kind of failure an [`Error`] is, for callers that map errors to responses or exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A row the operation needs does not exist.
    NotFound,
    /// An argument or a stored value is not acceptable.
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
    /// Anything else: a bug, or SQLite failing in a way the store does not classify.
    Internal,
}

impl ErrorKind {
    /// The kind as a stable snake_case name (`not_found`, `invalid`, `conflict`, `busy`,
    /// `refused`, `storage`, `internal`), for logs and machine-readable output.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "not_found",
            ErrorKind::Invalid => "invalid",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Busy => "busy",
            ErrorKind::Refused => "refused",
            ErrorKind::Storage => "storage",
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
    /// conflict 409, busy 503, refused and storage and internal 500, say). An unclassified SQLite
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
            | Error::KeyCommandFailed { .. } => ErrorKind::Storage,
            Error::Migration { source, .. }
            | Error::AfterCommit { source, .. }
            | Error::PostgresMigration { source, .. } => source.kind(),
            Error::Sqlite(e) => sqlite_kind(e),
            Error::NotFound { .. } => ErrorKind::NotFound,
            Error::Invalid { .. }
            | Error::UnknownEnumValue { .. }
            | Error::InvalidBool { .. }
            | Error::SecretTooShort { .. }
            | Error::SecretTagMismatch
            | Error::NoSecretKey
            | Error::SecretKeyMalformed { .. }
            | Error::KeyMalformed { .. }
            | Error::CopyValue { .. }
            | Error::Unsupported { .. }
            | Error::Cbor(_) => ErrorKind::Invalid,
            Error::Conflict { .. }
            | Error::LeaseLost { .. }
            | Error::JournalCap { .. }
            | Error::ToolNotDeletable { .. }
            | Error::NoNewKey { .. }
            | Error::KeyMoveRefused { .. }
            | Error::CopyTargetNotEmpty { .. } => ErrorKind::Conflict,
            Error::NoRows { .. } | Error::CopyMismatch { .. } => ErrorKind::Internal,
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
}
