//! Integrity: the full, read-only examination of a database file: SQLite's `integrity_check`
//! (every page, every index entry), `foreign_key_check`, and the gate's structural comparison.
//!
//! Invariant: it never writes and leaves no file behind (it reads through the same read-only
//! snapshot as `status`), and all three examinations read one snapshot.

use crate::error::{Error, Result};
use crate::gate::{self, State};
use crate::open::{snapshot, Verdict};
use crate::schema;
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
    crate::storage::check_path(&path)?;
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
    // A damaged file can make the check itself fail: that is a finding, not trouble.
    let finding = |e: Error| match crate::storage::judge(e, path) {
        Error::Refused { reason, .. } => Ok(vec![reason.to_string()]),
        e => Err(e),
    };
    let integrity = gate::pragma_rows(conn, "integrity_check").or_else(finding)?;
    let foreign_keys = foreign_key_rows(conn).or_else(finding)?;
    Ok(Report {
        path: path.to_path_buf(),
        verdict,
        integrity,
        foreign_keys,
    })
}

/// `foreign_key_check` rows as `table rowid N references parent (constraint K)`.
fn foreign_key_rows(conn: &Connection) -> Result<Vec<String>> {
    let mut stmt = conn.prepare("PRAGMA foreign_key_check")?;
    let rows = stmt
        .query_map([], |r| {
            let table: String = r.get(0)?;
            let rowid: Option<i64> = r.get(1)?;
            let parent: String = r.get(2)?;
            let fkid: i64 = r.get(3)?;
            Ok(match rowid {
                Some(id) => format!("{table} rowid {id} references a missing {parent} row (constraint {fkid})"),
                None => format!("{table} (a WITHOUT ROWID row) references a missing {parent} row (constraint {fkid})"),
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}
