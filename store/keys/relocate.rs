//! Moving the key out of the database to an external provider, and deleting key bytes so that
//! no copy stays behind in the file.
//!
//! Invariants: the key leaves the database only after the target provider has been checked to
//! serve it (same fingerprint), so no row is ever without a key; the delete runs with
//! `PRAGMA secure_delete` on (the freed cell is zeroed), and the move then rewrites the file
//! (`VACUUM`) and empties the write-ahead log, so no free page and no log frame keeps the bytes.

use super::registry::{self, config_name};
use super::{KeyProvider, ProviderKind};
use crate::audit::{Event, STORE_ACTOR};
use crate::error::{Error, Result};
use crate::schema::audit_events::Kind;
use crate::schema::server_config;
use crate::{query, Store};

/// What [`Store::move_key_out`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveReport {
    /// The key moved.
    pub key_id: i64,
    /// Its fingerprint.
    pub fingerprint: String,
    /// Where it lives now (`env:NAME`, `file:PATH`, `command:...`).
    pub target: String,
    /// Whether the target stored the key (a file provider creating its file) rather than
    /// already serving it.
    pub stored_by_target: bool,
    /// Whether the write-ahead log was emptied (it is not while another connection reads an old
    /// snapshot; the next checkpoint overwrites those frames).
    pub log_truncated: bool,
}

impl Store {
    /// Runs `f` with `PRAGMA secure_delete` on for the writer, so that what it deletes is
    /// zeroed in the file rather than left in free space; the setting is restored afterwards.
    pub(crate) fn with_secure_delete<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        // PostgreSQL keeps no deleted bytes in reusable pages the way SQLite's free list does;
        // what a delete leaves, its VACUUM removes (see `Store::move_key_out`).
        let Ok(writer) = self.sqlite_writer() else {
            return f();
        };
        let at = |e| self.location().classify(e);
        let before: i64 = writer
            .between_batches(|c| c.pragma_query_value(None, "secure_delete", |r| r.get(0)))
            .map_err(at)?;
        writer
            .between_batches(|c| c.pragma_update(None, "secure_delete", true))
            .map_err(at)?;
        let outcome = f();
        writer
            .between_batches(|c| c.pragma_update(None, "secure_delete", before))
            .map_err(at)?;
        outcome
    }

    /// Moves the secret encryption key out of the database to `target` (an environment
    /// variable, a file, a command): checks that `target` serves the same key (a
    /// [`FileKeyProvider`](crate::keys::FileKeyProvider) whose file is missing creates it with
    /// mode 600; others must be given the key beforehand), records the key's new provider, and
    /// deletes its bytes from `server_config` with `secure_delete` on, then runs `VACUUM` and
    /// truncates the write-ahead log, so the bytes are nowhere in the database's files. Open the
    /// store with `target` as its [`key_provider`](crate::OpenOptions::key_provider) afterwards.
    ///
    /// To put the key in an environment variable or a keychain, move it to a file first, load
    /// it from there, and delete the file: the key is never printed.
    ///
    /// ```
    /// use seed_agents_store::keys::FileKeyProvider;
    /// use seed_agents_store::Store;
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("agents.sqlite");
    /// let key_file = dir.path().join("secret.key");
    /// Store::open(&path)?.set_secret("acct", "token", b"v", None)?;
    /// let report = Store::open(&path)?.move_key_out(&FileKeyProvider::new(&key_file))?;
    /// assert!(report.stored_by_target);
    /// let store = Store::options().key_provider(FileKeyProvider::new(&key_file)).open(&path)?;
    /// assert_eq!(store.decrypt_secret("acct", "token")?.expose(), b"v");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::KeyMoveRefused`] when the target is the database, no key is registered, the
    /// current key is not in the database, or a rotation is in progress (finish it first);
    /// [`Error::KeyNotServed`] when the target does not serve the key; the provider's errors;
    /// [`Error::Sqlite`].
    pub fn move_key_out(&self, target: &dyn KeyProvider) -> Result<MoveReport> {
        let refuse = |reason: &str| Error::KeyMoveRefused {
            target: target.describe(),
            reason: reason.into(),
        };
        if target.kind() == ProviderKind::Database {
            return Err(refuse("the target is the database"));
        }
        let (id, key) = {
            let conn = self.reading()?;
            let current =
                registry::current(&conn.db())?.ok_or_else(|| refuse("no key exists yet"))?;
            if current.provider != ProviderKind::Database {
                return Err(refuse("the current key is not in the database"));
            }
            if !registry::older_live(&conn.db(), current.id)?.is_empty() {
                return Err(refuse(
                    "a rotation is in progress: finish it with rotate-key",
                ));
            }
            let row = server_config::get(&conn, &config_name(current.id))?;
            let row = row.ok_or(Error::NoSecretKey)?;
            (current.id, super::EncryptionKey::from_slice(&row.value)?)
        };
        let fingerprint = key.fingerprint();
        let stored_by_target = target.offer(&key)?;
        if !target
            .keys()?
            .iter()
            .any(|k| k.fingerprint() == fingerprint)
        {
            return Err(Error::KeyNotServed {
                id,
                provider: target.describe(),
                fingerprint: Some(fingerprint),
            });
        }
        drop(key);
        self.with_secure_delete(|| {
            self.write(|tx, now| {
                // Checked again inside the write: a rotation may have started meanwhile.
                let current = registry::current(tx)?;
                if current.as_ref().map(|c| (c.id, c.provider))
                    != Some((id, ProviderKind::Database))
                    || !registry::older_live(tx, id)?.is_empty()
                {
                    return Err(refuse(
                        "the key changed while it was being moved; try again",
                    ));
                }
                query!(
                    "UPDATE secret_keys SET provider = ?1, fingerprint = ?2 WHERE id = ?3",
                    target.kind(),
                    fingerprint.as_str(),
                    id
                )
                .execute(tx)?;
                query!("DELETE FROM server_config WHERE key = ?1", config_name(id)).execute(tx)?;
                Event::done(
                    STORE_ACTOR,
                    Kind::Secret,
                    "key.move",
                    format!("secret key {id}"),
                )
                .detail(format!(
                    "moved out of the database to {}",
                    target.kind().as_str()
                ))
                .record(tx, now)
            })
        })?;
        let log_truncated = self.erase_deleted()?;
        Ok(MoveReport {
            key_id: id,
            fingerprint,
            target: target.describe(),
            stored_by_target,
            log_truncated,
        })
    }
}

impl Store {
    /// Rewrites the database without the bytes of deleted rows: on SQLite `VACUUM` and a
    /// truncating checkpoint (whether the log was emptied is the answer); on PostgreSQL a
    /// `VACUUM` of `server_config`, whose write-ahead log the server recycles itself (`false`).
    fn erase_deleted(&self) -> Result<bool> {
        #[cfg(feature = "postgres")]
        if let Some(pool) = self.postgres() {
            pool.get()?.session().batch("VACUUM server_config")?;
            return Ok(false);
        }
        self.sqlite_writer()?
            .between_batches(|c| -> Result<bool> {
                c.execute_batch("VACUUM")?;
                let busy: i64 = c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
                Ok(busy == 0)
            })
            .map_err(|e| e.located(self.location()))
    }
}
