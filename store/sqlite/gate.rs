//! The schema gate: decides, without writing a byte, whether a database file is fresh, at a known
//! version with exactly that version's structure, or to be refused.
//!
//! Invariants: nothing here writes, so a refused file is left byte-for-byte as it was. The
//! version and the structure are read in one read transaction (one snapshot), so a migration
//! committed by another process is seen whole or not at all. A migration never starts on a file
//! in which `integrity_check` or `foreign_key_check` finds anything (`refuse_damaged`). Only the
//! file's own content is ever refused: a lock, a full disk, a read-only medium or an I/O error is
//! reported as what it is.

use crate::error::{Error, Refusal, Result};
use crate::extension::{self, Extensions, Owner};
use crate::query;
use crate::schema;
use crate::sqlite::storage;
use crate::values::version;
use rusqlite::Connection;
use seed_agents_model::introspect::catalog_text;
use seed_agents_model::{diff, introspect, Schema};
use std::path::Path;

pub use crate::values::version::{LEGACY_VERSION_KEY, VERSION_KEY};

/// What the gate found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// No object of ours: install the baseline.
    Fresh,
    /// A verified database at this version (possibly behind the binary).
    At(u32),
}

/// What the gate found: the store's state and each registered extension's version (`None`:
/// not installed), in the order they were registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub(crate) store: State,
    pub(crate) extensions: Vec<Option<u32>>,
}

/// Inspects `conn`, the open database file `path`, and returns its state. A file that holds an
/// extension's tables is refused: [`crate::OpenOptions::extension`] declares them.
///
/// Outside a transaction the reads run inside one `BEGIN DEFERRED` read transaction; inside one
/// (the migrator's `BEGIN IMMEDIATE`) they join it.
///
/// # Errors
/// [`Error::Refused`] when the file itself is refused; [`Error::Busy`], [`Error::DiskIo`] and the
/// other environment variants when the file could not be read (never a refusal).
pub fn inspect(conn: &Connection, path: &Path) -> Result<State> {
    inspect_with(conn, path, &Extensions::default()).map(|found| found.store)
}

/// [`inspect`] of a file that may hold the registered `extensions`' tables.
pub(crate) fn inspect_with(
    conn: &Connection,
    path: &Path,
    extensions: &Extensions,
) -> Result<Found> {
    let own = conn.is_autocommit();
    if own {
        conn.execute_batch("BEGIN DEFERRED")
            .map_err(|e| Error::from_sqlite(e, path))?;
    }
    let state = inspect_snapshot(conn, path, extensions);
    if own {
        // Ends the read transaction; nothing was written, so nothing can be lost.
        let _ = conn.execute_batch("ROLLBACK");
    }
    state
}

fn inspect_snapshot(conn: &Connection, path: &Path, extensions: &Extensions) -> Result<Found> {
    let refused = |reason| Error::Refused {
        path: path.to_path_buf(),
        reason,
    };
    let judged = |e| storage::judge(e, path);
    storage::check_length(path)?;
    let supported = schema::SCHEMA_VERSION;
    let own_objects = query!(
        "SELECT CAST(count(*) AS INTEGER) AS n FROM main.sqlite_schema \
         WHERE substr(lower(name), 1, 7) <> 'sqlite_' AND lower(name) NOT IN ('_litestream_seq', '_litestream_lock')"
    )
    .fetch_one(conn)
    .map_err(|e| {
        // A file found corrupt on its first read may be one cut inside its schema (with
        // auto_vacuum the schema's pages can be the last ones): the size check names that.
        // Only then: on any other failure (a lock held past the deadline) a second read
        // would wait the whole deadline again before the error is reported.
        let corrupt = matches!(&e, Error::Sqlite(e)
            if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseCorrupt));
        match corrupt.then(|| storage::check_size(conn, path)) {
            Some(Err(cut)) => cut,
            _ => judged(e),
        }
    })?
    .n;
    storage::check_size(conn, path)?;
    if own_objects == Some(0) {
        return Ok(Found {
            store: State::Fresh,
            extensions: extensions.iter().map(|_| None).collect(),
        });
    }
    let has_config = query!(
        "SELECT CAST(EXISTS (SELECT 1 FROM main.sqlite_schema WHERE type = 'table' AND name = 'server_config') AS INTEGER) AS found"
    )
    .fetch_one(conn)
    .map_err(judged)?
    .found;
    if has_config != Some(1) {
        return Err(refused(Refusal::NoServerConfig { supported }));
    }
    let version =
        version::claimed(|key| stored_text(conn, key).map_err(judged))?.map_err(refused)?;
    let stored: Vec<String> = query!(
        "SELECT CAST(key AS TEXT) AS \"key!\" FROM server_config WHERE substr(key, 1, 10) = 'extension:'"
    )
    .fetch_all(conn)
    .map_err(judged)?
    .into_iter()
    .map(|r| r.key)
    .collect();
    let versions = extensions
        .claimed(&stored, |key| stored_text(conn, key).map_err(judged))?
        .map_err(refused)?;
    verify_with(conn, path, version, extensions, &versions)?;
    Ok(Found {
        store: State::At(version),
        extensions: versions,
    })
}

/// Checks that the structure of `conn`, the database file `path`, is the structure of
/// `version`.
///
/// # Errors
/// [`Error::Refused`] with [`Refusal::StructureMismatch`] and the diff when it is not; trouble
/// reading the catalog as [`inspect`] reports it.
///
/// The structure [`introspect()`] reads is a function of the catalog's text alone (each object's
/// type, name, table and SQL), so a file whose text is one this build writes for the newest
/// version ([`schema::CATALOGS`]) is verified by reading and comparing
/// the text, and so is a text once verified for `version` in this process (remembered in a
/// process-wide set), without introspecting. Any change to the structure changes the text, and
/// is introspected and judged afresh.
pub fn verify(conn: &Connection, path: &Path, version: u32) -> Result<()> {
    verify_with(conn, path, version, &Extensions::default(), &[])
}

/// [`verify`] of the store at `version` and of each registered extension at its version in
/// `versions` (`None`: it must have no object in the file). Every object must belong to one of
/// them ([`extension::judge`]).
pub(crate) fn verify_with(
    conn: &Connection,
    path: &Path,
    version: u32,
    extensions: &Extensions,
    versions: &[Option<u32>],
) -> Result<()> {
    let judged = |e| storage::judge(Error::Sqlite(e), path);
    let text = catalog_text(conn).map_err(judged)?;
    let key = verified_key(version, extensions, versions);
    if let Some(text) = &text {
        // A file exactly as this build writes the newest version (and no extension in it):
        // known at build time, so even the first open in a process introspects nothing.
        let as_built = version == schema::SCHEMA_VERSION
            && versions.iter().all(Option::is_none)
            && schema::CATALOGS.contains(&&**text);
        if as_built || was_verified(&key, text) {
            return Ok(());
        }
    }
    let actual = introspect(conn).map_err(judged)?;
    let mut owners = vec![Owner {
        name: None,
        version,
        expected: version::model(version),
        fingerprint: schema::FINGERPRINTS[version as usize],
    }];
    for (ext, v) in extensions.iter().zip(versions) {
        if let Some(v) = *v {
            owners.push(Owner {
                name: Some(ext.name),
                version: v,
                expected: ext.model(v),
                fingerprint: ext.fingerprints[v as usize],
            });
        }
    }
    extension::judge(&actual, &owners, schema::SCHEMA_VERSION).map_err(|reason| {
        Error::Refused {
            path: path.to_path_buf(),
            reason,
        }
    })?;
    if let Some(text) = text {
        remember(key, text);
    }
    Ok(())
}

/// What a catalog text was verified against: the store's version and each extension's.
fn verified_key(version: u32, extensions: &Extensions, versions: &[Option<u32>]) -> String {
    let mut key = version.to_string();
    for (ext, v) in extensions.iter().zip(versions) {
        if let Some(v) = v {
            key.push_str(&format!(" {}={v}", ext.name));
        }
    }
    key
}

/// How many verified catalog texts [`VERIFIED`] keeps: a process meets one or two (its binary's
/// version, perhaps one more), so the bound only guards against a process that opens many
/// differently-built files.
const VERIFIED_CAPACITY: usize = 16;

/// The catalog texts this process has verified, with the versions each was verified against
/// ([`verified_key`]). In memory only: opening never writes to the file, and `server_config`
/// is left to the server's own keys.
static VERIFIED: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());

/// Whether `text` was verified against `key` in this process.
fn was_verified(key: &str, text: &str) -> bool {
    // A poisoned lock still holds only verified entries.
    let seen = VERIFIED.lock().unwrap_or_else(|e| e.into_inner());
    seen.iter().any(|(k, t)| k == key && t == text)
}

fn remember(key: String, text: String) {
    let mut seen = VERIFIED.lock().unwrap_or_else(|e| e.into_inner());
    if seen.iter().any(|(k, t)| *k == key && *t == text) {
        return;
    }
    if seen.len() == VERIFIED_CAPACITY {
        seen.remove(0);
    }
    seen.push((key, text));
}

/// Runs `PRAGMA quick_check` and refuses a file it finds damaged ([`Refusal::Corrupt`]).
///
/// # Errors
/// [`Error::Refused`] when damaged; trouble reading as [`inspect`] reports it.
pub fn quick_check(conn: &Connection, path: &Path) -> Result<()> {
    let problems = pragma_rows(conn, "quick_check").map_err(|e| match storage::judge(e, path) {
        Error::Refused {
            path,
            reason: Refusal::Corrupt { detail },
        } => Error::Refused {
            path,
            reason: Refusal::Corrupt {
                detail: format!("quick_check stopped: {detail}"),
            },
        },
        e => e,
    })?;
    if problems.is_empty() {
        return Ok(());
    }
    Err(Error::Refused {
        path: path.to_path_buf(),
        reason: Refusal::Corrupt {
            detail: format!("quick_check found: {}", problems.join("; ")),
        },
    })
}

/// The differences between `actual` and the structure of `version`, rendered for a person.
pub fn structure_diff(actual: &Schema, version: u32) -> String {
    let diffs = diff::diff(&version::model(version), actual);
    diff::render(
        &diffs,
        &format!("version {version}"),
        "the database",
        |_| None,
    )
}

/// The value stored under `key` as text: the version is TEXT digits in a BLOB column, so it is
/// read through a cast (a BLOB or INTEGER value reads as its text too).
fn stored_text(conn: &Connection, key: &str) -> crate::Result<Option<String>> {
    Ok(query!(
        "SELECT CAST(value AS TEXT) AS value FROM server_config WHERE key = ?1",
        key
    )
    .fetch_optional(conn)?
    .map(|r| r.value.unwrap_or_default()))
}

/// The version a database claims, without verifying anything (for reports).
pub fn claimed_version(conn: &Connection) -> Option<String> {
    stored_text(conn, VERSION_KEY).ok().flatten()
}

/// The rows of a checking pragma (`quick_check`, `integrity_check`) as text, or none when it
/// reports `ok`.
pub(crate) fn pragma_rows(conn: &Connection, pragma: &str) -> Result<Vec<String>> {
    let mut stmt = conn.prepare(&format!("PRAGMA {pragma}"))?;
    let rows = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(if rows == ["ok"] { Vec::new() } else { rows })
}

/// What `integrity_check` and `foreign_key_check` report, each empty when clean.
pub(crate) fn findings(conn: &Connection, path: &Path) -> Result<(Vec<String>, Vec<String>)> {
    // A damaged file can make the check itself fail: that is a finding, not trouble.
    let finding = |e: Error| match storage::judge(e, path) {
        Error::Refused { reason, .. } => Ok(vec![reason.to_string()]),
        e => Err(e),
    };
    let integrity = pragma_rows(conn, "integrity_check").or_else(finding)?;
    let foreign_keys = foreign_key_rows(conn).or_else(finding)?;
    Ok((integrity, foreign_keys))
}

/// How many findings of each examination a refusal lists; `check` lists them all.
const LISTED: usize = 8;

/// Refuses `conn`, the file `path` about to be migrated, when `integrity_check` or
/// `foreign_key_check` finds anything: a migration rewrites tables and carries whatever is
/// wrong into the newest version, where it is harder to tell from the migration's own doing.
/// `quick_check` is not enough: it does not compare an index with its table.
///
/// # Errors
/// [`Error::Refused`] with [`crate::Refusal::Corrupt`] listing the findings; trouble reading the
/// file as what it is.
pub(crate) fn refuse_damaged(conn: &Connection, path: &Path) -> Result<()> {
    let (integrity, foreign_keys) = findings(conn, path)?;
    let mut parts = Vec::new();
    for (check, found) in [
        ("integrity_check", integrity),
        ("foreign_key_check", foreign_keys),
    ] {
        if found.is_empty() {
            continue;
        }
        let more = found.len().saturating_sub(LISTED);
        let mut listed = found
            .into_iter()
            .take(LISTED)
            .collect::<Vec<_>>()
            .join("; ");
        if more > 0 {
            listed.push_str(&format!("; and {more} more"));
        }
        parts.push(format!("{check} found: {listed}"));
    }
    if parts.is_empty() {
        return Ok(());
    }
    Err(Error::Refused {
        path: path.to_path_buf(),
        reason: Refusal::Corrupt {
            detail: format!("{} (checked before migrating it)", parts.join("; ")),
        },
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

#[cfg(test)]
mod tests {
    use super::{catalog_text, verify};
    use crate::schema::{CATALOGS, MIGRATIONS, SCHEMA_SQL, SCHEMA_VERSION};
    use crate::values::version::parse_version;
    use rusqlite::Connection;
    use std::path::Path;

    fn text(conn: &Connection) -> String {
        catalog_text(conn).unwrap().unwrap()
    }

    /// A fresh install and a file migrated from genesis have the catalog texts the build
    /// embeds (each a different text: schema.sql's statements carry its comments); planner
    /// statistics are not structure and change nothing.
    #[test]
    fn the_files_this_build_writes_are_known_by_their_catalog_text() {
        let fresh = Connection::open_in_memory().unwrap();
        fresh.execute_batch(SCHEMA_SQL).unwrap();
        fresh.execute_batch("ANALYZE").unwrap();
        let migrated = Connection::open_in_memory().unwrap();
        for m in MIGRATIONS {
            migrated.execute_batch(m.sql).unwrap();
        }
        assert_eq!(CATALOGS, [text(&fresh), text(&migrated)]);
    }

    /// A catalog the build does not know (one column more) is introspected and refused, however
    /// close its text is to a known one.
    #[test]
    fn an_unknown_catalog_is_introspected_and_judged() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(SCHEMA_SQL).unwrap();
        verify(&conn, Path::new("x.sqlite"), SCHEMA_VERSION).unwrap();
        conn.execute_batch("ALTER TABLE runs ADD COLUMN shadow TEXT")
            .unwrap();
        assert!(!CATALOGS.contains(&text(&conn).as_str()));
        let e = verify(&conn, Path::new("x.sqlite"), SCHEMA_VERSION).unwrap_err();
        assert!(e.to_string().contains("shadow"), "{e}");
    }

    #[test]
    fn versions_are_plain_digits() {
        assert_eq!(parse_version("11"), Some(11));
        assert_eq!(parse_version("0029"), Some(29));
        for bad in ["", " 1", "1 ", "-1", "+1", "1.0", "x", "99999999999"] {
            assert_eq!(parse_version(bad), None, "{bad:?}");
        }
    }
}
