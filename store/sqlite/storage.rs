//! The database file on disk: whether a path can hold it, its `-wal`/`-shm`/`-journal`
//! companions, its header and size, and how a read-only look opens it.
//!
//! Invariants: a path that cannot hold a file (anything but a regular file), or cannot be
//! written, is reported naming it before SQLite creates anything next to it; a non-empty file
//! too short to be a database is refused (SQLite itself reports a 1-byte file as empty); a
//! read-only look never writes and never leaves a `-wal` or `-shm` file behind that was not
//! there, and neither does a read-only store once its last connection closes. The database file
//! itself is never opened here, only `stat`ed: closing any descriptor of a file drops every POSIX
//! lock the process holds on it, including SQLite's.

use crate::error::{Error, Refusal, Result};
use rusqlite::{Connection, OpenFlags};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The smallest page, so the smallest database file there is.
const MIN_PAGE: u64 = 512;

/// `path` with `suffix` appended (`-wal`, `-shm`, `-journal`).
pub(crate) fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Classifies SQLite's failure to open the connection to `path`. For `SQLITE_CANTOPEN` SQLite
/// does not say why, the system does: the file is opened once more, for reading. This runs only
/// when SQLite could not open the file at all, so no connection of this call holds a lock on it
/// that closing the probe could drop.
pub(crate) fn open_failed(e: rusqlite::Error, path: &Path) -> Error {
    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::CannotOpen) {
        if let Err(io) = fs::File::open(path) {
            if io.kind() != std::io::ErrorKind::NotFound {
                return Error::from_io(io, path);
            }
        }
    }
    Error::from_sqlite(e, path)
}

/// Errs when `path` cannot name a database file: it is a directory, a device, a FIFO or a
/// socket (anything but a regular file, links followed), or one of its ancestors is a regular
/// file. A missing file under real directories is fine.
pub(crate) fn check_path(path: &Path) -> Result<()> {
    let not_a_file = |reason: String| Error::NotAFilePath {
        path: path.to_path_buf(),
        reason,
    };
    match fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(m) => Err(not_a_file(format!("it is {}", file_type(&m.file_type())))),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            match blocking_file(path) {
                Some(file) => Err(not_a_file(format!(
                    "{} is a regular file, not a directory",
                    file.display()
                ))),
                None => Ok(()),
            }
        }
        Err(e) => Err(Error::from_io(e, path)),
    }
}

/// What a file that is not a regular file is, for a message: `a directory`, `a character
/// device`, ...
fn file_type(t: &fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

/// The nearest existing ancestor of `path`, when it is not a directory.
fn blocking_file(path: &Path) -> Option<PathBuf> {
    for dir in path.ancestors().skip(1) {
        if dir.as_os_str().is_empty() {
            return None;
        }
        if let Ok(m) = fs::metadata(dir) {
            return (!m.is_dir()).then(|| dir.to_path_buf());
        }
    }
    None
}

/// Makes sure `path` can hold a database: its directories exist (created when missing), and a
/// missing file is created empty (as SQLite would), so that a read-only medium, a permission or a
/// full disk is reported with its path and cause. An existing file is not opened here (see the
/// module doc); [`writable`] checks it once SQLite has it open.
pub(crate) fn prepare(path: &Path) -> Result<()> {
    check_path(path)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(|e| Error::from_io(e, dir))?;
    }
    match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(Error::from_io(e, path)),
    }
}

/// Errs when SQLite could only open `path` read-only (it falls back silently): before anything
/// was read, so no `-wal` or `-shm` was created next to a file that cannot be written.
pub(crate) fn writable(conn: &Connection, path: &Path) -> Result<()> {
    if !conn
        .is_readonly(rusqlite::MAIN_DB)
        .map_err(|e| Error::from_sqlite(e, path))?
    {
        return Ok(());
    }
    let protected = fs::metadata(path).is_ok_and(|m| m.permissions().readonly());
    Err(Error::ReadOnly {
        path: path.to_path_buf(),
        detail: if protected {
            "the file is write-protected".into()
        } else {
            "the file, or its file system, does not allow writing".into()
        },
    })
}

/// Refuses a non-empty file shorter than the smallest database (one 512-byte page). SQLite's
/// unix VFS reports a 1-byte file as 0 bytes (a workaround for an old OS X file system), so
/// without this a 1-byte file of any content would be taken for an empty one and overwritten;
/// longer files that are not SQLite are refused by SQLite itself.
pub(crate) fn check_length(path: &Path) -> Result<()> {
    let len = match fs::metadata(path) {
        Ok(m) => m.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::from_io(e, path)),
    };
    if len == 0 || len >= MIN_PAGE {
        return Ok(());
    }
    Err(Error::Refused {
        path: path.to_path_buf(),
        reason: Refusal::NotADatabase {
            message: format!(
                "the file is {len} bytes, shorter than the smallest SQLite database ({MIN_PAGE} bytes)"
            ),
        },
    })
}

/// Refuses a file cut short: with no WAL frames pending, the main file must hold whole pages,
/// at least as many as the database counts. Cheap (two pragmas and a `stat`), so every open
/// runs it; a copy missing its last byte is caught here, not by the first query that reads it.
pub(crate) fn check_size(conn: &Connection, path: &Path) -> Result<()> {
    let wal = fs::metadata(sidecar(path, "-wal")).map_or(0, |m| m.len());
    let len = match fs::metadata(path) {
        Ok(m) => m.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::from_io(e, path)),
    };
    if wal > 0 || len == 0 {
        return Ok(());
    }
    let pragma = |name: &str| -> Result<u64> {
        conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get::<_, i64>(0))
            .map(|n| n.max(0) as u64)
            .map_err(|e| judge(Error::Sqlite(e), path))
    };
    // The page size needs no schema (`page_count` does): a cut inside the schema is named too.
    let page_size = pragma("page_size")?.max(1);
    let detail = if len % page_size != 0 {
        format!("the file is {len} bytes, not a whole number of {page_size}-byte pages: it was cut short or extended")
    } else {
        let pages = pragma("page_count")?;
        if pages * page_size <= len {
            return Ok(());
        }
        format!(
            "it counts {pages} pages of {page_size} bytes but the file holds only {len} bytes: it was cut short"
        )
    };
    Err(Error::Refused {
        path: path.to_path_buf(),
        reason: Refusal::Corrupt { detail },
    })
}

/// How a read-only connection is meant to be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Look {
    /// One short look (status, check): never leaves a file behind.
    Snapshot,
    /// A store kept open for reading while others may write.
    Live,
}

/// A read-only connection to `path`, and, when it had to be opened `immutable`, what the file
/// looked like then (see [`Unchanged::holds`]).
pub(crate) fn open_read_only(path: &Path, look: Look) -> Result<(Connection, Option<Unchanged>)> {
    let ro = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let at = |e| Error::from_sqlite(e, path);
    let exists = |suffix| sidecar(path, suffix).exists();
    let plain = || -> Result<Connection> {
        let mut conn = Connection::open_with_flags(path, ro).map_err(|e| open_failed(e, path))?;
        crate::sqlite::busy::install(&mut conn).map_err(at)?;
        Ok(conn)
    };
    let bare = !exists("-wal") && !exists("-shm") && !exists("-journal");
    // A -wal holding frames belongs to a writer, live or crashed: its connections (or the next
    // read-write open) deal with it, and a reader here never copies it into the file.
    let wal_frames = fs::metadata(sidecar(path, "-wal")).is_ok_and(|m| m.len() > 0);
    if look == Look::Live && !exists("-journal") && !wal_frames {
        if let Some(conn) = tidy_reader(path)? {
            return Ok((conn, None));
        }
        if bare && unchangeable(path) {
            // Immutable (`chattr +i`): no writer can start, so the file is read `immutable`,
            // which creates nothing next to it.
            return Ok((immutable(path)?, None));
        }
    }
    if look == Look::Live || exists("-shm") || exists("-journal") {
        // A live database (its -shm exists), a rollback journal (hot or in use: SQLite must see
        // it), or a store kept open: a plain read-only connection locks properly and creates
        // nothing a writer would not.
        let conn = plain()?;
        if !(look == Look::Live && bare) {
            return Ok((conn, None));
        }
        // On read-only media SQLite cannot create the -wal/-shm a WAL file needs; nothing can
        // change such a file, so it is read `immutable` below.
        if first_read(&conn, CANNOT_MAKE_WAL).map_err(at)? {
            return Ok((conn, None));
        }
    } else if exists("-wal") {
        if let Some(conn) = stale_wal(path)? {
            return Ok((conn, None));
        }
        // Another connection has the file open (the -wal was just created and its -shm is
        // coming): a plain read-only connection shares them like any reader.
        return Ok((plain()?, None));
    }
    // No -wal, -shm or -journal: everything is in the main file, and a plain read-only
    // connection would create a -wal and -shm for a WAL-mode file. Opened `immutable` it creates
    // nothing and takes no lock, so the caller checks afterwards that no writer started (every
    // writer creates a -journal or a -wal first) and the file did not change meanwhile.
    let before = Unchanged::now(path)?;
    Ok((immutable(path)?, Some(before)))
}

/// A connection reading `path` `immutable`: no lock, no `-wal` or `-shm`, nothing created.
fn immutable(path: &Path) -> Result<Connection> {
    Connection::open_with_flags(
        format!("{}?immutable=1", file_uri(path)),
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI,
    )
    .map_err(|e| open_failed(e, path))
}

/// A reader for a store kept open read-only: a read-write connection that never writes
/// (`query_only`). It reads as any reader does, and as the last connection to close the file
/// it removes the `-wal` and `-shm` that reading a WAL file made, as a writer does, so a
/// read-only store leaves nothing behind. (A plain read-only connection cannot remove them.)
/// Never with a `-journal` beside the file (a read-write connection would roll a hot one back)
/// or a `-wal` holding frames (it would copy them into the file as it closes). `None` when this
/// process cannot write the file, or its directory cannot hold the `-wal`.
fn tidy_reader(path: &Path) -> Result<Option<Connection>> {
    let at = |e| Error::from_sqlite(e, path);
    let mut conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| open_failed(e, path))?;
    if conn.is_readonly(rusqlite::MAIN_DB).map_err(at)? {
        return Ok(None);
    }
    crate::sqlite::busy::install(&mut conn).map_err(at)?;
    conn.pragma_update(None, "query_only", true).map_err(at)?;
    let read = first_read(&conn, CANNOT_MAKE_WAL).map_err(|e| judge(at(e), path))?;
    Ok(read.then_some(conn))
}

/// What SQLite answers a first read with where it cannot create the `-wal` or `-shm` a WAL
/// file needs (a read-only directory or medium).
const CANNOT_MAKE_WAL: &[rusqlite::ErrorCode] = &[
    rusqlite::ErrorCode::CannotOpen,
    rusqlite::ErrorCode::ReadOnly,
];

/// Reads the catalog once through `conn`: `true` when it can, `false` when SQLite answers with
/// one of `unless` (this connection cannot serve here, another way must), SQLite's error
/// otherwise.
fn first_read(conn: &Connection, unless: &[rusqlite::ErrorCode]) -> rusqlite::Result<bool> {
    match conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| {
        r.get::<_, i64>(0)
    }) {
        Ok(_) => Ok(true),
        Err(e) if e.sqlite_error_code().is_some_and(|c| unless.contains(&c)) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Whether no process can write `path`: it is immutable (`chattr +i`, `EPERM` for anyone) or on
/// a read-only file system. A file only this process may not write is not: its owner may start
/// a writer at any time.
fn unchangeable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        matches!(
            rustix::fs::access(path, rustix::fs::Access::WRITE_OK),
            Err(e) if e == rustix::io::Errno::PERM || e == rustix::io::Errno::ROFS
        )
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

/// A connection reading a `-wal` that no other connection has open, without creating a `-shm`:
/// in exclusive locking mode SQLite keeps the WAL index in memory. That mode needs a read-write
/// handle, so writes are switched off, and so is the checkpoint on close. `None` when the file
/// is write-protected, or when another connection has it open (the exclusive lock is refused at
/// once): then there is, or soon will be, a `-shm` to share.
fn stale_wal(path: &Path) -> Result<Option<Connection>> {
    let at = |e| Error::from_sqlite(e, path);
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| open_failed(e, path))?;
    if conn.is_readonly(rusqlite::MAIN_DB).map_err(at)? {
        return Ok(None);
    }
    conn.busy_timeout(Duration::ZERO).map_err(at)?;
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    )
    .map_err(at)?;
    conn.pragma_update(None, "query_only", true).map_err(at)?;
    conn.pragma_update(None, "locking_mode", "EXCLUSIVE")
        .map_err(at)?;
    // Another connection has the file open: the exclusive lock is refused at once.
    let taken = [
        rusqlite::ErrorCode::DatabaseBusy,
        rusqlite::ErrorCode::DatabaseLocked,
    ];
    let read = first_read(&conn, &taken).map_err(at)?;
    Ok(read.then_some(conn))
}

/// What a file opened `immutable` looked like: a look is only valid if no other connection
/// created a `-wal` or changed the file while it lasted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unchanged {
    path: PathBuf,
    len: u64,
    modified: Option<SystemTime>,
}

impl Unchanged {
    fn now(path: &Path) -> Result<Unchanged> {
        let m = fs::metadata(path).map_err(|e| Error::from_io(e, path))?;
        Ok(Unchanged {
            path: path.to_path_buf(),
            len: m.len(),
            modified: m.modified().ok(),
        })
    }

    /// Whether the file is still as it was and has no companion files.
    pub(crate) fn holds(&self) -> bool {
        ["-wal", "-shm", "-journal"]
            .iter()
            .all(|s| !sidecar(&self.path, s).exists())
            && Unchanged::now(&self.path).is_ok_and(|now| now == *self)
    }
}

/// A `file:` URI for `path`: every byte outside the unreserved set is percent-encoded, so any
/// path (non-ASCII, `?`, `#`, `%`) names exactly that file.
pub(crate) fn file_uri(path: &Path) -> String {
    #[cfg(unix)]
    let bytes = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()).to_vec();
    #[cfg(not(unix))]
    let bytes = path.to_string_lossy().into_owned().into_bytes();
    let mut uri = String::from(if path.has_root() { "file://" } else { "file:" });
    for b in bytes {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri
}

/// Sorts an error met while reading the file: SQLite saying the file is not a database or is
/// damaged is a refusal of the file; anything else is trouble reported as what it is.
pub(crate) fn judge(e: Error, path: &Path) -> Error {
    use rusqlite::ErrorCode as C;
    let Error::Sqlite(e) = e else { return e };
    let refused = |reason| Error::Refused {
        path: path.to_path_buf(),
        reason,
    };
    match e.sqlite_error_code() {
        Some(C::NotADatabase) => refused(Refusal::NotADatabase {
            message: e.to_string(),
        }),
        Some(C::DatabaseCorrupt) => refused(Refusal::Corrupt {
            detail: e.to_string(),
        }),
        Some(_) => Error::from_sqlite(e, path),
        // Not an error SQLite raised: a catalog this store cannot read (e.g. a NULL where
        // SQLite keeps text) is not one of ours.
        None => refused(Refusal::NotADatabase {
            message: e.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::file_uri;
    use std::path::Path;

    #[test]
    fn uris_encode_every_byte_that_could_be_read_as_syntax() {
        assert_eq!(
            file_uri(Path::new("/a b/ä?#%.db")),
            "file:///a%20b/%C3%A4%3F%23%25.db"
        );
        assert_eq!(file_uri(Path::new("data/x.sqlite")), "file:data/x.sqlite");
    }
}
