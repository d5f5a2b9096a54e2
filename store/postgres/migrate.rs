//! Installing and migrating a PostgreSQL database.
//!
//! Invariant: one transaction per call, holding the schema advisory lock from its first
//! statement, judges the database again under that lock (another node may have just installed
//! or migrated it), then installs the latest structure or applies every step from its version
//! on, and moves the version key, all or nothing: PostgreSQL's DDL is transactional, so a failed
//! step leaves the database exactly at the version it was.

use super::gate::{fail, judge, State};
use super::{Database, SCHEMA_LOCK};
use crate::error::{Error, Result};
use crate::extension::{Extension, Extensions};
use crate::schema;
use crate::sqlite::gate::VERSION_KEY;
use crate::sqlite::migrate::Outcome;
use postgres::Transaction;

impl Database {
    /// Brings the database to this binary's version: installs the schema into an empty
    /// database, migrates an older one, and leaves a current one as it is.
    ///
    /// # Errors
    /// [`Error::PostgresRefused`] when the gate refuses it (nothing is written);
    /// [`Error::PostgresMigration`] when a step fails (everything is rolled back);
    /// [`Error::Postgres`] when the server fails.
    pub fn prepare(&mut self) -> Result<Outcome> {
        self.prepare_with(&Extensions::default())
    }

    /// [`Database::prepare`], then each registered extension installed or migrated to its own
    /// version, in the same transaction.
    pub(crate) fn prepare_with(&mut self, extensions: &Extensions) -> Result<Outcome> {
        let name = self.name.clone();
        let mut tx = self.client.transaction().map_err(|e| fail(&name, e))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
            .map_err(|e| fail(&name, e))?;
        let (state, versions) = judge(&mut tx, &name, extensions)?;
        let outcome = match state {
            State::Fresh => {
                install(&mut tx, &name)?;
                Outcome::Fresh {
                    version: schema::SCHEMA_VERSION,
                }
            }
            State::At(version) if version == schema::SCHEMA_VERSION => Outcome::Current { version },
            State::At(from) => {
                upgrade(&mut tx, &name, from)?;
                Outcome::Migrated {
                    from,
                    to: schema::SCHEMA_VERSION,
                }
            }
        };
        let mut changed = !matches!(outcome, Outcome::Current { .. });
        for (ext, at) in extensions.iter().zip(&versions) {
            changed |= prepare_extension(&mut tx, &name, ext, *at)?;
        }
        if !changed {
            return Ok(outcome);
        }
        if !extensions.is_empty() {
            // The extensions' structure is judged again, as the gate will on the next open.
            judge(&mut tx, &name, extensions)?;
        }
        tx.commit().map_err(|e| fail(&name, e))?;
        Ok(outcome)
    }
}

/// Installs `ext` (found at `at`, `None`: not installed) or applies its steps after `at`;
/// whether anything was written.
fn prepare_extension(
    tx: &mut Transaction<'_>,
    name: &str,
    ext: &Extension,
    at: Option<u32>,
) -> Result<bool> {
    let key = ext.version_key();
    match at {
        Some(v) if v == ext.version => return Ok(false),
        None => {
            for statement in ext.postgres_schema {
                tx.batch_execute(statement).map_err(|e| fail(name, e))?;
            }
        }
        Some(from) => {
            for step in ext.postgres_migrations.iter().filter(|m| m.version > from) {
                tx.batch_execute(step.sql)
                    .map_err(|e| Error::PostgresMigration {
                        database: name.to_string(),
                        from,
                        to: ext.version,
                        migration: format!("{} of the extension {}", step.name, ext.name),
                        source: Box::new(fail(name, e)),
                    })?;
            }
        }
    }
    set_key(tx, name, &key, ext.version)?;
    Ok(true)
}

/// Creates the latest structure and writes the version key.
pub(super) fn install(tx: &mut Transaction<'_>, name: &str) -> Result<()> {
    for statement in schema::POSTGRES_SCHEMA {
        tx.batch_execute(statement).map_err(|e| fail(name, e))?;
    }
    set_version(tx, name, schema::SCHEMA_VERSION)
}

/// Applies every step after `from`, in order.
pub(super) fn upgrade(tx: &mut Transaction<'_>, name: &str, from: u32) -> Result<()> {
    let to = schema::SCHEMA_VERSION;
    for step in schema::POSTGRES_MIGRATIONS
        .iter()
        .filter(|m| m.version > from)
    {
        tx.batch_execute(step.sql)
            .map_err(|e| Error::PostgresMigration {
                database: name.to_string(),
                from,
                to,
                migration: step.name.to_string(),
                source: Box::new(fail(name, e)),
            })?;
    }
    set_version(tx, name, to)
}

/// Stores `version` under the version key, as TEXT digits in the BLOB column as SQLite's store
/// keeps it.
pub(super) fn set_version(tx: &mut Transaction<'_>, name: &str, version: u32) -> Result<()> {
    set_key(tx, name, VERSION_KEY, version)
}

/// Stores `version` under `key` (the store's version key, or an extension's).
fn set_key(tx: &mut Transaction<'_>, name: &str, key: &str, version: u32) -> Result<()> {
    let value = version.to_string().into_bytes();
    tx.execute(
        "INSERT INTO server_config (key, value) VALUES ($1, $2) \
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        &[&key, &value],
    )
    .map_err(|e| fail(name, e))?;
    Ok(())
}
