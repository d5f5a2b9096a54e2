//! Looking at a database file without opening it as a store: [`status`] and the read-only
//! snapshot that `check` and `copy` read through.
//!
//! Invariant: nothing here writes, creates a file beside the database, or waits for a writer;
//! a look that a concurrent writer may have torn is taken again.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rusqlite::Connection;

use crate::error::{Error, Location, Result};
use crate::schema;
use crate::sqlite::gate::{self, State};
use crate::sqlite::storage::{self, Look};

/// What `status` found, read-only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusReport {
    /// The database file.
    pub path: PathBuf,
    /// What the gate says.
    pub verdict: Verdict,
    /// This binary's version.
    pub supported: u32,
}

/// The gate's verdict on a file, without changing it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// No file: `open` would create one.
    Missing,
    /// An empty file: `open` would install the baseline.
    Fresh,
    /// A verified file at `version`; `pending` lists the migrations `open` would apply.
    Verified {
        /// The version it claims and has.
        version: u32,
        /// Migrations `open` would apply, oldest first.
        pending: Vec<&'static str>,
    },
    /// The gate refuses the file.
    Refused(crate::error::Refusal),
}

/// Inspects `path` read-only: the file is never written, no `-wal` or `-shm` file is left behind,
/// and a hot rollback journal is never ignored.
///
/// # Errors
/// [`Error::HotJournal`] when an interrupted write must be rolled back first;
/// [`Error::NotAFilePath`], [`Error::Busy`] and the other environment variants for trouble with
/// the path or the medium; [`Error::Sqlite`] otherwise.
pub fn status(path: impl AsRef<Path>) -> Result<StatusReport> {
    let path = path.as_ref().to_path_buf();
    let supported = schema::SCHEMA_VERSION;
    storage::check_path(&path)?;
    if !path.exists() {
        return Ok(StatusReport {
            path,
            verdict: Verdict::Missing,
            supported,
        });
    }
    let verdict = snapshot(&path, |conn| {
        Ok(match gate::inspect(conn, &path) {
            Ok(State::Fresh) => Verdict::Fresh,
            Ok(State::At(version)) => Verdict::Verified {
                version,
                pending: schema::MIGRATIONS[version as usize + 1..]
                    .iter()
                    .map(|m| m.name)
                    .collect(),
            },
            Err(Error::Refused { reason, .. }) => Verdict::Refused(reason),
            Err(e) => return Err(e),
        })
    })?;
    Ok(StatusReport {
        path,
        verdict,
        supported,
    })
}

/// Runs `look` on a read-only connection to the existing file `path`. A look through an
/// `immutable` connection is repeated when another connection opened or changed the file while
/// it ran (it could have read a half-written state).
pub(crate) fn snapshot<T>(path: &Path, look: impl Fn(&Connection) -> Result<T>) -> Result<T> {
    let location = Location {
        path: Arc::from(path),
        read_only: true,
    };
    let mut attempts = 0;
    loop {
        let (conn, unchanged) = storage::open_read_only(path, Look::Snapshot)?;
        let seen = look(&conn).map_err(|e| e.located(&location));
        drop(conn);
        attempts += 1;
        // After one change another connection has a -wal and -shm open, so the next look is a
        // plain locked one; the bound only guards against a file rewritten without them.
        if attempts == 5 || unchanged.is_none_or(|u| u.holds()) {
            return seen;
        }
    }
}
