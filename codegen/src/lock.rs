//! `migrations/migrations.lock`: a chained SHA-256 over each migration's normalized SQL, so a
//! shipped migration cannot change behind our back while a comment or whitespace fix can.
//!
//! Line `n` holds `NNNN_slug <hex>` where the hash covers the previous line's hash, the version and
//! the migration's [`normalize`](crate::sql::normalize)d SQL.

use crate::error::{Error, Result};
use crate::migration::Migration;
use sha2::{Digest, Sha256};
use std::path::Path;

/// The lock file's name inside `migrations/`.
pub const LOCK_FILE: &str = "migrations.lock";

const HEADER: &str = "# Chained SHA-256 of each migration's normalized SQL (comments and whitespace do not count).\n# Written by `cargo run -p seed-agents-codegen --features cli -- lock schema`; a shipped line never changes.\n";

/// The chained hashes of `migrations` (genesis first), one per migration.
pub fn chain(migrations: &[Migration]) -> Vec<String> {
    let mut prev = hex::encode(Sha256::digest(b"seed-agents-store migrations.lock v1"));
    migrations
        .iter()
        .map(|m| {
            let mut h = Sha256::new();
            h.update(prev.as_bytes());
            h.update(format!("\n{}\n", m.version).as_bytes());
            h.update(m.normalized.as_bytes());
            prev = hex::encode(h.finalize());
            prev.clone()
        })
        .collect()
}

/// The lock file's text for `migrations`.
pub fn render(migrations: &[Migration]) -> String {
    let mut out = HEADER.to_string();
    for (m, h) in migrations.iter().zip(chain(migrations)) {
        out.push_str(&format!("{} {h}\n", m.name));
    }
    out
}

/// Checks `lock_text` (the lock file at `lock_path`) against `migrations`: every locked line must
/// match, and every migration must be locked ([`Error::NotLocked`] names the first that is not).
pub fn check(lock_path: &Path, lock_text: &str, migrations: &[Migration]) -> Result<()> {
    let err = |message: String| Error::Lock {
        path: lock_path.to_path_buf(),
        message,
    };
    let locked: Vec<(&str, &str)> = lock_text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            l.split_once(' ')
                .map(|(n, h)| (n, h.trim()))
                .unwrap_or((l, ""))
        })
        .collect();
    let actual = chain(migrations);
    for (i, (name, hash)) in locked.iter().enumerate() {
        let Some(m) = migrations.get(i) else {
            return Err(err(format!(
                "locks {name}, but there is no such migration file: a shipped migration must never be removed"
            )));
        };
        if m.name != *name {
            return Err(err(format!(
                "line {} locks {name}, but migration {} is {}: shipped migrations are never renamed or reordered",
                i + 1,
                m.version,
                m.name
            )));
        }
        if actual[i] != *hash {
            return Err(err(format!(
                "{}.sql changed after it shipped (its normalized SQL no longer matches the lock). \
                 Restore it and put the change in a new migration; a comment or whitespace edit does not count as a change",
                m.name
            )));
        }
    }
    if let Some(m) = migrations.get(locked.len()) {
        return Err(Error::NotLocked {
            path: lock_path.to_path_buf(),
            migration: m.name.clone(),
        });
    }
    Ok(())
}
