//! The vocabulary of schema versions, which both backends' gates and every chain (the store's
//! and each extension's) share: the version keys, how a stored version is read, and one
//! migration as the build embeds it.
//!
//! Invariant: a version is TEXT digits and nothing else, and both backends judge the store's
//! keys one way ([`claimed`]).

use crate::error::{Refusal, Result};
use crate::schema;
use seed_agents_model::Schema;

/// The `server_config` key holding the schema version as TEXT digits.
pub const VERSION_KEY: &str = "schema_migration_version";
/// The key older servers used before migrations were tracked.
pub const LEGACY_VERSION_KEY: &str = "schema_version";

/// The version a database claims, read through `read` (the stored text of a `server_config`
/// key): the refusal for a legacy key, a missing, unparseable or newer version, or the
/// version. Both backends' gates judge the keys this one way.
///
/// # Errors
/// Whatever `read` fails with (trouble reading, never a refusal).
pub(crate) fn claimed(
    mut read: impl FnMut(&str) -> Result<Option<String>>,
) -> Result<std::result::Result<u32, Refusal>> {
    let supported = schema::SCHEMA_VERSION;
    if let Some(value) = read(LEGACY_VERSION_KEY)? {
        return Ok(Err(Refusal::LegacyVersionKey { value, supported }));
    }
    let Some(value) = read(VERSION_KEY)? else {
        return Ok(Err(Refusal::MissingVersion { supported }));
    };
    let Some(version) = parse_version(&value) else {
        return Ok(Err(Refusal::UnparseableVersion { value, supported }));
    };
    if version > supported {
        return Ok(Err(Refusal::VersionAhead {
            found: version,
            supported,
        }));
    }
    Ok(Ok(version))
}

/// The store's structure at `version`, from the canonical JSON the build embedded.
pub(crate) fn model(version: u32) -> Schema {
    Schema::from_canonical_json(schema::MODELS[version as usize])
        .expect("the build embeds every version's model as canonical JSON")
}

/// Strict: ASCII digits only, no sign, no spaces.
pub(crate) fn parse_version(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// One migration: the SQL that brings a database from `version - 1` to `version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmbeddedMigration {
    /// The version this migration brings a database to.
    pub version: u32,
    /// The file stem, e.g. `0024_signer_capability`.
    pub name: &'static str,
    /// The SQL.
    pub sql: &'static str,
}
