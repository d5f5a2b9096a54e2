//! Installs the baseline into a fresh file and applies pending migrations.
//!
//! Invariant: each runs inside one `BEGIN IMMEDIATE` transaction. A fresh install writes the
//! baseline and the version stamp together; a migration batch applies every pending migration in
//! its own savepoint, stamping the version after each, and any failure rolls the whole batch back
//! so the file is left exactly as it was. Before a migration writes, the whole file must pass
//! `integrity_check` (every page, every index against its table) and `foreign_key_check`: a
//! damaged file is refused, not built on. After a batch commits, the pages it left free are
//! given back when they are many (a `VACUUM`, in its own write, outside the batch).

use crate::error::{Error, Result};
use crate::extension::Extensions;
use crate::sqlite::gate::{self, Found, State, VERSION_KEY};
use crate::{query, schema};
use rusqlite::Connection;
use std::path::Path;

pub use crate::values::version::EmbeddedMigration;

/// What opening did to the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// An empty file got the baseline at this version.
    Fresh {
        /// The version stamped.
        version: u32,
    },
    /// Pending migrations were applied.
    Migrated {
        /// The version the file was at.
        from: u32,
        /// The version it is at now.
        to: u32,
    },
    /// The file was already current.
    Current {
        /// Its version.
        version: u32,
    },
}

/// What an open that migrates is doing, reported to the observer given to
/// [`OpenOptions::on_progress`](crate::OpenOptions::on_progress) (the CLI draws it on a terminal).
/// An open of a current file reports nothing; a fresh install reports [`Progress::Installing`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Progress<'a> {
    /// The baseline is being installed into an empty file at `version`.
    Installing {
        /// The version being installed.
        version: u32,
    },
    /// The whole file is checked before it is migrated: `integrity_check` (every page, every
    /// index against its table) and `foreign_key_check`.
    Checking,
    /// Migration `step` of `steps` (1-based) is starting.
    Migrating {
        /// 1-based position in this batch.
        step: usize,
        /// Migrations in this batch.
        steps: usize,
        /// The migration, e.g. `0024_signer_capability`.
        name: &'a str,
    },
    /// Migration `step` of `steps` is applied (its savepoint released).
    Migrated {
        /// 1-based position in this batch.
        step: usize,
        /// Migrations in this batch.
        steps: usize,
        /// The migration.
        name: &'a str,
        /// Rows it inserted, updated or deleted.
        rows: u64,
    },
    /// The migrated structure is being compared with the baseline's.
    Verifying,
    /// The committed migrations left `free_pages` of the file's `pages` free (the old pages of
    /// a table they rebuilt): a `VACUUM` is giving them back to the file system and turning on
    /// incremental auto-vacuum, so that pruning can give pages back later.
    Compacting {
        /// Free pages before.
        free_pages: u64,
        /// Pages in the file before.
        pages: u64,
    },
    /// The file was compacted to `pages` pages.
    Compacted {
        /// Pages in the file now.
        pages: u64,
    },
    /// Compacting after the migration failed (the copy `VACUUM` writes found no room, or
    /// another connection held the lock): the migrated file is fine and complete, its free
    /// pages stay in it and later writes reuse them.
    CompactionSkipped {
        /// What failed.
        reason: &'a str,
    },
}

/// Brings a database the gate found as `found` to the newest version, then each registered
/// extension to its own, telling `progress` what it does on the way. The store's outcome is
/// returned; the extensions are installed and migrated in the same transaction.
pub(crate) fn upgrade(
    conn: &mut Connection,
    path: &Path,
    found: Found,
    extensions: &Extensions,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Outcome> {
    let latest = schema::SCHEMA_VERSION;
    let current = found.store == State::At(latest)
        && extensions
            .iter()
            .zip(&found.extensions)
            .all(|(ext, v)| *v == Some(ext.version));
    if current {
        return Ok(Outcome::Current { version: latest });
    }
    if found.store == State::Fresh {
        // Only an empty file takes this (on any other it does nothing): freed pages can then be
        // given back to the file a batch at a time (`PRAGMA incremental_vacuum`), never needing
        // the whole-file rewrite of a VACUUM.
        conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
    }
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    // Another process may have installed or migrated while we waited for the write lock.
    let found = gate::inspect_with(&tx, path, extensions)?;
    // Before any migration writes, the whole file is checked, once.
    let migrating = matches!(found.store, State::At(v) if v < latest)
        || extensions
            .iter()
            .zip(&found.extensions)
            .any(|(ext, v)| matches!(*v, Some(v) if v < ext.version));
    if migrating {
        progress(Progress::Checking);
        gate::refuse_damaged(&tx, path)?;
    }
    let outcome = match found.store {
        State::Fresh => {
            progress(Progress::Installing { version: latest });
            tx.execute_batch(schema::SCHEMA_SQL)?;
            stamp(&tx, VERSION_KEY, latest)?;
            Outcome::Fresh { version: latest }
        }
        State::At(v) if v == latest => Outcome::Current { version: v },
        State::At(from) => {
            apply(
                &tx,
                path,
                from,
                &schema::MIGRATIONS[from as usize + 1..],
                progress,
            )?;
            Outcome::Migrated { from, to: latest }
        }
    };
    for (ext, at) in extensions.iter().zip(&found.extensions) {
        let key = ext.version_key();
        match *at {
            None => {
                tx.execute_batch(ext.schema_sql)?;
                stamp(&tx, &key, ext.version)?;
            }
            Some(v) if v == ext.version => {}
            Some(from) => {
                apply_keyed(
                    &tx,
                    path,
                    Chain {
                        key: &key,
                        label: Some(ext.name),
                    },
                    from,
                    &ext.migrations[from as usize + 1..],
                    progress,
                )?;
            }
        }
    }
    if !matches!(outcome, Outcome::Fresh { .. }) || !extensions.is_empty() {
        progress(Progress::Verifying);
        let versions: Vec<_> = extensions.iter().map(|e| Some(e.version)).collect();
        gate::verify_with(&tx, path, latest, extensions, &versions)?;
    }
    tx.commit()?;
    if migrating {
        compact(conn, path, progress);
    }
    Ok(outcome)
}

/// A migration that leaves at least this share (1/N) of the file free is followed by a compaction.
const COMPACT_SHARE: i64 = 4;
/// ... and at least this many free pages (1 MiB of 4 KiB pages): a small file is not worth it.
const COMPACT_MIN_PAGES: i64 = 256;

/// Gives back the pages the committed migrations left free, when they are many (a migration
/// that rebuilt a large table leaves all of its old pages free: 47% of the TypeScript server's
/// 1M-event file). `VACUUM` rewrites the file without them and, since `auto_vacuum` is set
/// first, with incremental auto-vacuum on, which files the TypeScript server made lack; the
/// WAL it grew is then truncated. An operator migrating wants that space back, and a migration
/// is rare; but the migration has committed, so a compaction that fails is reported
/// ([`Progress::CompactionSkipped`]) and the open goes on.
fn compact(conn: &Connection, path: &Path, progress: &mut dyn FnMut(Progress<'_>)) {
    let count = |pragma: &str| conn.query_row(pragma, [], |r| r.get::<_, i64>(0));
    let (Ok(free), Ok(pages)) = (count("PRAGMA freelist_count"), count("PRAGMA page_count")) else {
        return;
    };
    if free < COMPACT_MIN_PAGES || free * COMPACT_SHARE < pages {
        return;
    }
    progress(Progress::Compacting {
        free_pages: free as u64,
        pages: pages as u64,
    });
    let compacted = conn
        .execute_batch("PRAGMA auto_vacuum = INCREMENTAL; VACUUM; PRAGMA wal_checkpoint(TRUNCATE);")
        .and_then(|()| count("PRAGMA page_count"));
    match compacted {
        Ok(pages) => progress(Progress::Compacted {
            pages: pages as u64,
        }),
        Err(e) => progress(Progress::CompactionSkipped {
            reason: &Error::from_sqlite(e, path).to_string(),
        }),
    }
}

/// Applies `migrations` in order on a connection inside a transaction, each in its own savepoint,
/// stamping its version after it. Stops at the first failure with the savepoint rolled back; the
/// caller's transaction decides the rest (the store rolls the whole batch back).
pub(crate) fn apply(
    conn: &Connection,
    path: &Path,
    from: u32,
    migrations: &[EmbeddedMigration],
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<()> {
    let store = Chain {
        key: VERSION_KEY,
        label: None,
    };
    apply_keyed(conn, path, store, from, migrations, progress)
}

/// Whose migrations a batch applies: the version key it stamps, and the extension's name that
/// errors put before a migration's (none for the store's).
struct Chain<'a> {
    key: &'a str,
    label: Option<&'a str>,
}

/// [`apply`] of the chain `chain`.
fn apply_keyed(
    conn: &Connection,
    path: &Path,
    chain: Chain<'_>,
    from: u32,
    migrations: &[EmbeddedMigration],
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<()> {
    let to = migrations.last().map_or(from, |m| m.version);
    let steps = migrations.len();
    for (i, m) in migrations.iter().enumerate() {
        let step = i + 1;
        progress(Progress::Migrating {
            step,
            steps,
            name: m.name,
        });
        let before = conn.total_changes();
        let fail = |source: Error| Error::Migration {
            path: path.to_path_buf(),
            from,
            to,
            migration: match chain.label {
                Some(ext) => format!("{} of the extension {ext}", m.name),
                None => m.name.to_string(),
            },
            source: Box::new(source),
        };
        query!("SAVEPOINT migration").execute(conn).map_err(fail)?;
        // Rows are counted before the version stamp, which is not the migration's doing.
        let applied = conn
            .execute_batch(m.sql)
            .map_err(|e| Error::from_sqlite(e, path))
            .map(|()| conn.total_changes().saturating_sub(before))
            .and_then(|rows| stamp(conn, chain.key, m.version).map(|()| rows));
        match applied {
            Ok(rows) => {
                query!("RELEASE migration").execute(conn).map_err(fail)?;
                progress(Progress::Migrated {
                    step,
                    steps,
                    name: m.name,
                    rows,
                });
            }
            Err(e) => {
                // Best effort: the outer transaction is rolled back by the caller anyway.
                let _ = query!("ROLLBACK TO migration").execute(conn);
                let _ = query!("RELEASE migration").execute(conn);
                return Err(fail(e));
            }
        }
    }
    Ok(())
}

/// Stamps `version` under `key` as TEXT digits (the column is a BLOB; the cast keeps the
/// historical form).
fn stamp(conn: &Connection, key: &str, version: u32) -> Result<()> {
    query!(
        "INSERT INTO server_config (key, value) VALUES (?1, CAST(?2 AS TEXT)) \
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        key,
        version.to_string()
    )
    .execute(conn)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_version(conn: &Connection, v: u32) {
        conn.execute_batch(schema::MIGRATIONS[0].sql).unwrap();
        apply(
            conn,
            Path::new(":memory:"),
            0,
            &schema::MIGRATIONS[1..=v as usize],
            &mut |_| {},
        )
        .unwrap();
    }

    fn tables(conn: &Connection) -> Vec<String> {
        query!("SELECT CAST(name AS TEXT) AS name FROM sqlite_schema ORDER BY name")
            .fetch_all(conn)
            .unwrap()
            .into_iter()
            .filter_map(|r| r.name)
            .collect()
    }

    #[test]
    fn a_batch_that_fails_halfway_leaves_version_and_tables_as_they_were() {
        let mut conn = Connection::open_in_memory().unwrap();
        at_version(&conn, 3);
        let before = tables(&conn);
        let batch = [
            EmbeddedMigration {
                version: 4,
                name: "0004_ok",
                sql: "CREATE TABLE extra (id TEXT PRIMARY KEY) WITHOUT ROWID;",
            },
            EmbeddedMigration {
                version: 5,
                name: "0005_broken",
                sql: "ALTER TABLE no_such_table ADD COLUMN x TEXT;",
            },
        ];
        let tx = conn.transaction().unwrap();
        let mut seen = Vec::new();
        let err = apply(&tx, Path::new("test.sqlite"), 3, &batch, &mut |p| {
            seen.push(format!("{p:?}"))
        })
        .unwrap_err();
        drop(tx); // rolls back, as upgrade() does on error
        let msg = err.to_string();
        assert!(msg.contains("0005_broken"), "{msg}");
        assert!(msg.contains("from version 3 to 5"), "{msg}");
        assert!(msg.contains("no such table"), "{msg}");
        assert_eq!(tables(&conn), before);
        assert_eq!(gate::claimed_version(&conn).as_deref(), Some("3"));
        // The first step was reported done, the second only started.
        assert_eq!(
            seen,
            [
                r#"Migrating { step: 1, steps: 2, name: "0004_ok" }"#,
                r#"Migrated { step: 1, steps: 2, name: "0004_ok", rows: 0 }"#,
                r#"Migrating { step: 2, steps: 2, name: "0005_broken" }"#,
            ]
        );
    }
}
