//! Where a SQLite store lives, as the typed value its frames and reads attach to SQLite's
//! errors.
//!
//! Invariant: no error is classified from ambient state. A statement's error knows no path, so
//! `From<rusqlite::Error>` gives [`Error::Sqlite`] always; the write frame, a read connection
//! of the pool and the opening steps each know their store's [`Location`] and classify what
//! failed there: a read-only, full or failing medium becomes its typed variant naming the path.

use std::path::Path;
use std::sync::Arc;

use super::Error;

/// Where a SQLite store lives, as a typed value the frames and reads that start on it attach
/// to SQLite's errors: an error from a statement knows no path, so the write frame, the read
/// connection and the opening steps classify it here, and a read-only, full or failing medium
/// is reported with the path it concerns.
#[derive(Debug, Clone)]
pub(crate) struct Location {
    /// The database file.
    pub(crate) path: Arc<Path>,
    /// Whether the store was opened read-only (a refused write is then the caller's choice,
    /// not the medium's trouble).
    pub(crate) read_only: bool,
}

impl Location {
    /// `e` with a read-only, full or failing medium typed and naming this database; busy is
    /// left to the caller's retry policy, everything else is [`Error::Sqlite`].
    pub(crate) fn classify(&self, e: rusqlite::Error) -> Error {
        use rusqlite::ErrorCode as C;
        let code = e.sqlite_error_code();
        let storage = matches!(
            code,
            Some(C::ReadOnly | C::DiskFull | C::SystemIoFailure | C::PermissionDenied)
        );
        let hot = matches!(&e, rusqlite::Error::SqliteFailure(f, _)
            if f.extended_code == rusqlite::ffi::SQLITE_READONLY_ROLLBACK);
        if self.read_only && code == Some(C::ReadOnly) && !hot {
            return Error::ReadOnly {
                path: self.path.to_path_buf(),
                detail: format!("the store was opened read-only ({e})"),
            };
        }
        if storage {
            return Error::from_sqlite(e, &self.path);
        }
        Error::Sqlite(e)
    }
}

impl Error {
    /// `self`, with an unclassified SQLite error classified at `location`
    /// ([`Location::classify`]); any other error as it is.
    pub(crate) fn located(self, location: &Location) -> Error {
        match self {
            Error::Sqlite(e) => location.classify(e),
            e => e,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Error, Location};
    use crate::ErrorKind;
    use rusqlite::ffi;

    fn sqlite(extended: i32) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(ffi::Error::new(extended), Some("sqlite says".into()))
    }

    fn at(read_only: bool) -> Location {
        Location {
            path: std::path::Path::new("/srv/agents.sqlite").into(),
            read_only,
        }
    }

    #[test]
    fn a_statements_error_is_unclassified_until_its_location_classifies_it() {
        // Whatever store this thread touched before, conversion alone names no path.
        let plain: Error = sqlite(ffi::SQLITE_FULL).into();
        assert!(matches!(plain, Error::Sqlite(_)), "{plain}");
        let located = plain.located(&at(false));
        assert!(matches!(located, Error::DiskFull { .. }), "{located}");
        assert!(
            located.to_string().contains("/srv/agents.sqlite"),
            "{located}"
        );
    }

    #[test]
    fn the_medium_is_typed_busy_is_left_to_the_retry_and_the_rest_stays_sqlite() {
        for (code, read_only, kind, variant) in [
            (ffi::SQLITE_IOERR_READ, false, ErrorKind::Storage, "DiskIo"),
            (
                ffi::SQLITE_PERM,
                false,
                ErrorKind::Storage,
                "PermissionDenied",
            ),
            (ffi::SQLITE_READONLY, false, ErrorKind::Storage, "ReadOnly"),
            (ffi::SQLITE_READONLY, true, ErrorKind::Storage, "ReadOnly"),
            (
                ffi::SQLITE_READONLY_ROLLBACK,
                true,
                ErrorKind::Storage,
                "HotJournal",
            ),
            (ffi::SQLITE_BUSY, false, ErrorKind::Busy, "Sqlite"),
            (
                ffi::SQLITE_CONSTRAINT_UNIQUE,
                false,
                ErrorKind::Conflict,
                "Sqlite",
            ),
        ] {
            let e = at(read_only).classify(sqlite(code));
            assert_eq!(e.kind(), kind, "{code}: {e}");
            assert!(format!("{e:?}").starts_with(variant), "{code}: {e:?}");
        }
        let refused = at(true).classify(sqlite(ffi::SQLITE_READONLY));
        assert!(
            refused.to_string().contains("opened read-only"),
            "{refused}"
        );
    }
}
