//! The schema gate: decides, without writing a byte, whether a database file is fresh, at a known
//! version with exactly that version's structure, or to be refused.
//!
//! Invariant: nothing here writes. A refused file is left byte-for-byte as it was.

use crate::error::Refusal;
use crate::query;
use crate::schema;
use rusqlite::Connection;
use seed_agents_codegen::{diff, introspect, Schema};

/// The `server_config` key holding the schema version as TEXT digits.
pub const VERSION_KEY: &str = "schema_migration_version";
/// The key older servers used before migrations were tracked.
pub const LEGACY_VERSION_KEY: &str = "schema_version";

/// What the gate found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// No object of ours: install the baseline.
    Fresh,
    /// A verified database at this version (possibly behind the binary).
    At(u32),
}

/// Inspects `conn` and returns its state, or why it must be refused.
pub fn inspect(conn: &Connection) -> Result<State, Refusal> {
    let supported = schema::SCHEMA_VERSION;
    let not_a_db = |e: crate::Error| Refusal::NotADatabase {
        message: e.to_string(),
    };
    let own_objects = query!(
        "SELECT CAST(count(*) AS INTEGER) AS n FROM main.sqlite_schema \
         WHERE substr(lower(name), 1, 7) <> 'sqlite_' AND substr(lower(name), 1, 12) <> '_litestream_'"
    )
    .fetch_one(conn)
    .map_err(not_a_db)?
    .n;
    if own_objects == Some(0) {
        return Ok(State::Fresh);
    }
    let has_config = query!(
        "SELECT CAST(EXISTS (SELECT 1 FROM main.sqlite_schema WHERE type = 'table' AND name = 'server_config') AS INTEGER) AS found"
    )
    .fetch_one(conn)
    .map_err(not_a_db)?
    .found;
    if has_config != Some(1) {
        return Err(Refusal::NoServerConfig { supported });
    }
    let read =
        |key: &str| -> Result<Option<String>, Refusal> { stored_text(conn, key).map_err(not_a_db) };
    if let Some(value) = read(LEGACY_VERSION_KEY)? {
        return Err(Refusal::LegacyVersionKey { value, supported });
    }
    let value = read(VERSION_KEY)?.ok_or(Refusal::MissingVersion { supported })?;
    let version = parse_version(&value).ok_or_else(|| Refusal::UnparseableVersion {
        value: value.clone(),
        supported,
    })?;
    if version > supported {
        return Err(Refusal::VersionAhead {
            found: version,
            supported,
        });
    }
    verify(conn, version)?;
    Ok(State::At(version))
}

/// Checks that the structure of `conn` is the structure of `version`.
pub fn verify(conn: &Connection, version: u32) -> Result<(), Refusal> {
    let actual = introspect(conn).map_err(|e| Refusal::NotADatabase {
        message: e.to_string(),
    })?;
    if actual.fingerprint() == schema::FINGERPRINTS[version as usize] {
        return Ok(());
    }
    Err(Refusal::StructureMismatch {
        version,
        supported: schema::SCHEMA_VERSION,
        diff: structure_diff(&actual, version),
    })
}

/// The differences between `actual` and the structure of `version`, rendered for a person.
pub fn structure_diff(actual: &Schema, version: u32) -> String {
    let expected = Schema::from_canonical_json(schema::MODELS[version as usize])
        .expect("MODELS holds the canonical JSON codegen wrote at build time");
    let diffs = diff::diff(&expected, actual);
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

/// Strict: ASCII digits only, no sign, no spaces.
fn parse_version(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// The version a database claims, without verifying anything (for reports).
pub fn claimed_version(conn: &Connection) -> Option<String> {
    stored_text(conn, VERSION_KEY).ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::parse_version;

    #[test]
    fn versions_are_plain_digits() {
        assert_eq!(parse_version("11"), Some(11));
        assert_eq!(parse_version("0029"), Some(29));
        for bad in ["", " 1", "1 ", "-1", "+1", "1.0", "x", "99999999999"] {
            assert_eq!(parse_version(bad), None, "{bad:?}");
        }
    }
}
