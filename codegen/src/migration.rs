//! The migration files: `migrations/NNNN_slug.sql`, numbered from the frozen genesis
//! (`0000_genesis.sql`, version 0) without gaps or repeats.
//!
//! Invariant: a [`Migration`] list read here is complete and in order, so index `v` is the
//! migration that brings a database to version `v`.

use crate::error::{read, Error, Result};
use crate::sql;
use std::fs;
use std::path::{Path, PathBuf};

/// One migration file (`0000_genesis.sql` is version 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Migration {
    /// The version this migration brings a database to.
    pub version: u32,
    /// The file stem, e.g. `0024_signer_capability`.
    pub name: String,
    /// The file.
    pub path: PathBuf,
    /// The SQL as written.
    pub sql: String,
    /// The SQL without comments and with single spaces: what the lock hashes.
    pub normalized: String,
}

/// Reads `dir/*.sql` as migrations: `NNNN_slug.sql`, numbered 0, 1, 2, ... without gaps.
pub fn read_migrations(dir: &Path) -> Result<Vec<Migration>> {
    let entries = fs::read_dir(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| Error::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("sql") {
            continue;
        }
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_string();
        let version =
            parse_name(&stem).ok_or_else(|| Error::BadMigrationName { path: path.clone() })?;
        found.push((version, stem, path));
    }
    found.sort();
    let mut out = Vec::with_capacity(found.len());
    for (i, (version, name, path)) in found.into_iter().enumerate() {
        let expected = i as u32;
        if version != expected {
            let message = if version < expected {
                format!("{name}.sql repeats version {version}")
            } else if expected == 0 {
                format!("there is no genesis (0000_genesis.sql); the first file is {name}.sql")
            } else {
                format!(
                    "version {expected} is missing: the file after {} is {name}.sql",
                    out.last()
                        .map_or(String::new(), |m: &Migration| format!("{}.sql", m.name))
                )
            };
            return Err(Error::Numbering { message });
        }
        let sql = read(&path)?;
        let normalized = sql::normalize(&sql).map_err(|e| Error::Lex {
            path: path.clone(),
            line: e.line,
            what: e.what,
        })?;
        out.push(Migration {
            version,
            name,
            path,
            sql,
            normalized,
        });
    }
    if out.is_empty() {
        return Err(Error::Numbering {
            message: format!(
                "{} holds no migrations; it needs at least 0000_genesis.sql",
                dir.display()
            ),
        });
    }
    Ok(out)
}

fn parse_name(stem: &str) -> Option<u32> {
    let (num, slug) = stem.split_once('_')?;
    let ok = num.len() == 4
        && num.bytes().all(|b| b.is_ascii_digit())
        && !slug.is_empty()
        && slug
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    ok.then(|| num.parse().ok()).flatten()
}
