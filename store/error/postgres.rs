//! What the PostgreSQL client's errors mean: their kind by SQLSTATE, and their text. The
//! client's own `Display` says only "db error" for anything the server answered, and only "error
//! connecting to server" for a refused connection; [`Detail`] puts back what a person needs to
//! act (the server's severity, SQLSTATE, message, detail and hint, or the I/O error beneath).

use super::ErrorKind;
use std::fmt;

/// The kind of a PostgreSQL error by its SQLSTATE: a serialization failure, a deadlock or a
/// lock not granted is busy (retrying may succeed); a unique or foreign-key violation is a
/// conflict; a NOT NULL or CHECK violation and bad data are invalid input; no connection, a
/// refused login, a database that does not exist, a full disk, a read-only server and missing
/// privileges are storage (the data is not at fault).
pub(super) fn kind(e: &postgres::Error) -> ErrorKind {
    let Some(code) = e.code() else {
        // No SQLSTATE: the connection failed or closed, or I/O on it did.
        return ErrorKind::Storage;
    };
    let code = code.code();
    match code {
        "40001" | "40P01" | "55P03" => ErrorKind::Busy,
        "23505" | "23503" | "23P01" => ErrorKind::Conflict,
        "23502" | "23514" => ErrorKind::Invalid,
        "25006" | "42501" => ErrorKind::Storage,
        _ if ["08", "28", "3D", "53", "57"]
            .iter()
            .any(|class| code.starts_with(class)) =>
        {
            ErrorKind::Storage
        }
        _ if code.starts_with("22") => ErrorKind::Invalid,
        _ => ErrorKind::Internal,
    }
}

/// The whole text of a PostgreSQL client error, as [`super::Error::Postgres`] shows it.
pub(super) struct Detail<'a>(pub(super) &'a postgres::Error);

impl fmt::Display for Detail<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(db) = self.0.as_db_error() {
            write!(
                f,
                "{} {}: {}",
                db.severity(),
                db.code().code(),
                db.message()
            )?;
            if let Some(detail) = db.detail() {
                write!(f, " ({detail})")?;
            }
            if let Some(hint) = db.hint() {
                write!(f, "; hint: {hint}")?;
            }
            return Ok(());
        }
        write!(f, "{}", self.0)?;
        let mut cause = std::error::Error::source(self.0);
        while let Some(c) = cause {
            write!(f, ": {c}")?;
            cause = c.source();
        }
        Ok(())
    }
}
