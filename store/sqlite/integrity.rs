//! Integrity: the full, read-only examination of a database file: SQLite's `integrity_check`
//! (every page, every index entry against its table), `foreign_key_check`, and the gate's
//! structural comparison. (The gate reads the same page and key findings before a migration.)
//!
//! Invariant: it never writes and leaves no file behind (it reads through the same read-only
//! snapshot as `status`), and all three examinations read one snapshot.

use crate::error::{Error, Result};
use crate::schema;
use crate::sqlite::gate::{self, State};
use crate::sqlite::status::{snapshot, Verdict};
use rusqlite::Connection;
use std::path::{Path, PathBuf};

/// What `check` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The database file.
    pub path: PathBuf,
    /// The gate's verdict: version and structure.
    pub verdict: Verdict,
    /// What `PRAGMA integrity_check` reported; empty when it says `ok`.
    pub integrity: Vec<String>,
    /// Rows `PRAGMA foreign_key_check` reported, one line each.
    pub foreign_keys: Vec<String>,
}

impl Report {
    /// Whether nothing is wrong: integrity and foreign keys clean, and the gate accepts the file.
    pub fn is_clean(&self) -> bool {
        self.integrity.is_empty()
            && self.foreign_keys.is_empty()
            && !matches!(self.verdict, Verdict::Refused(_))
    }
}

/// Examines the existing file `path` without writing to it.
///
/// # Errors
/// [`Error::Refused`] when the file is not a SQLite database at all (nothing can be checked);
/// [`Error::Io`] when it does not exist; environment trouble as [`crate::status`] reports it.
pub fn check(path: impl AsRef<Path>) -> Result<Report> {
    let path = path.as_ref().to_path_buf();
    crate::sqlite::storage::check_path(&path)?;
    std::fs::metadata(&path).map_err(|e| Error::from_io(e, &path))?;
    snapshot(&path, |conn| {
        conn.execute_batch("BEGIN DEFERRED")
            .map_err(|e| Error::from_sqlite(e, &path))?;
        let report = examine(conn, &path);
        let _ = conn.execute_batch("ROLLBACK");
        report
    })
}

fn examine(conn: &Connection, path: &Path) -> Result<Report> {
    let verdict = match gate::inspect(conn, path) {
        Ok(State::Fresh) => Verdict::Fresh,
        Ok(State::At(version)) => Verdict::Verified {
            version,
            pending: schema::MIGRATIONS[version as usize + 1..]
                .iter()
                .map(|m| m.name)
                .collect(),
        },
        Err(Error::Refused {
            reason: reason @ crate::Refusal::NotADatabase { .. },
            ..
        }) => {
            return Err(Error::Refused {
                path: path.to_path_buf(),
                reason,
            })
        }
        Err(Error::Refused { reason, .. }) => Verdict::Refused(reason),
        Err(e) => return Err(e),
    };
    let (integrity, foreign_keys) = gate::findings(conn, path)?;
    Ok(Report {
        path: path.to_path_buf(),
        verdict,
        integrity,
        foreign_keys,
    })
}
