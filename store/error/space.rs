//! Free space on the file system holding a database: how an I/O error in a full place is told
//! from a failing medium.
//!
//! Invariant: an error is called a full disk only when the file system really has (almost) no
//! room left; the original error stays in the message either way.

use std::path::Path;

/// Below this many free bytes an I/O error is taken for a full disk: SQLite's smallest need is
/// a 32 KiB `-shm` region or a page, and a medium with so little room left fails any of them.
const NEARLY_FULL: u64 = 1 << 20;

/// The bytes free to this process on the file system holding `path` (or, for a path not yet
/// created, its nearest existing ancestor), when that is less than [`NEARLY_FULL`].
pub(super) fn nearly_full(path: &Path) -> Option<u64> {
    let existing = path
        .ancestors()
        .find(|p| !p.as_os_str().is_empty() && p.exists())?;
    let free = available(existing)?;
    (free < NEARLY_FULL).then_some(free)
}

#[cfg(unix)]
fn available(path: &Path) -> Option<u64> {
    let s = rustix::fs::statvfs(path).ok()?;
    Some(s.f_bavail.saturating_mul(s.f_frsize))
}

#[cfg(not(unix))]
fn available(_path: &Path) -> Option<u64> {
    None
}
